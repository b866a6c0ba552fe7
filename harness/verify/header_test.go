package verify_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// A report says how it was made — enough to run the same trials again —
// and reads back from its JSON the same; a verification stopped with an
// error gets the same header, marked incomplete.
func TestVerifyHeader(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	limits := []limit.Limit{{Count: 5, Window: time.Second}, {Count: 20, Window: time.Minute}}
	lim, err := algorithms.NewBucketedHash(srv.Client(), limits...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verifyConfig(limits[0])
	cfg.Limits, cfg.Seed, cfg.Clients, cfg.Skew, cfg.TargetSHA256 = limits, 42, 3, 20*time.Millisecond, "ab12"
	before := time.Now().UTC().Add(-time.Second)
	rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := rep.Header
	wantRepro := measure.Repro{Seed: 42, Clients: 3, SkewMS: 20, TargetSHA256: "ab12",
		Limits: []limit.Limit{{Count: 5, Window: time.Second}, {Count: 20, Window: time.Minute}}}
	switch {
	case h.SchemaVersion != measure.SchemaVersion || h.Tool != "ratelab" || h.ToolVersion == "" || h.Command != "verify":
		t.Errorf("header identity: %+v", h)
	case h.RunID == "" || h.Redis.Version == "" || h.Redis.Mode == "":
		t.Errorf("run id and Redis: %+v", h)
	case h.StartedAt.Before(before) || h.StartedAt.Location() != time.UTC || h.DurationMS <= 0:
		t.Errorf("start %v (want UTC after %v), duration %d ms", h.StartedAt, before, h.DurationMS)
	case !h.Complete || h.Error != "":
		t.Errorf("complete %v, error %q", h.Complete, h.Error)
	}
	if got, _ := json.Marshal(h.Repro); !bytes.Equal(got, mustJSON(t, wantRepro)) {
		t.Errorf("repro %s, want %s", got, mustJSON(t, wantRepro))
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back measure.VerifyReport
	if err := json.Unmarshal(b, &back); err != nil || !back.Complete || back.RunID != h.RunID || len(back.Repro.Limits) != 2 {
		t.Errorf("round trip: %v %+v", err, back.Header)
	}

	stopped := verify.Incomplete(srv.Redis, lim, cfg, before, errors.New("redis gone"))
	if stopped.Complete || stopped.Error != "redis gone" || stopped.Command != "verify" || stopped.Repro.Seed != 42 || stopped.Redis.Version == "" {
		t.Errorf("incomplete report's header: %+v", stopped.Header)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
