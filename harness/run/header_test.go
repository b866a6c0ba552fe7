package run_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// A run's results say how it was made: the header every command shares,
// with the run's seed, limit override and the user's script digests.
func TestRunHeader(t *testing.T) {
	mine := targets.Target{Name: "mine.lua", SHA256: "cafe", New: func(r redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
		return algorithms.New("sliding-log", r, l)
	}}
	before := time.Now().UTC().Add(-time.Second)
	res, err := run.Run(ctx, srv.Redis, run.Config{Algorithms: []string{"fixed-window"}, Targets: []targets.Target{mine},
		Scenarios: []string{"boundary-burst"}, Limit: limit.Limit{Count: 20, Window: time.Hour}, Seed: 9}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := res.Header
	switch {
	case h.SchemaVersion != measure.SchemaVersion || h.Tool != "ratelab" || h.ToolVersion == "" || h.Command != "run":
		t.Errorf("identity: %+v", h)
	case h.RunID == "" || res.Config.Prefix != "ratelab:"+h.RunID+":" || h.Redis != srv.Redis.Info:
		t.Errorf("run id %q (prefix %q), redis %+v", h.RunID, res.Config.Prefix, h.Redis)
	case h.StartedAt.Before(before) || !h.Complete || h.Error != "":
		t.Errorf("start %v complete %v error %q", h.StartedAt, h.Complete, h.Error)
	case h.Repro.Seed != 9 || h.Repro.TargetSHA256 != "cafe" ||
		len(h.Repro.Limits) != 1 || h.Repro.Limits[0] != (limit.Limit{Count: 20, Window: time.Hour}):
		t.Errorf("repro %+v", h.Repro)
	}
}
