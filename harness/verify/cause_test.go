package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// A starvation's cause is read from the starved trial's decisions, at a
// minute and an hour alike: a strict GCRA (burst 1) never admits cost 2
// (a cost above the burst); a window whose expiry every hit pushes out
// locks a steady client out to the end of the trial (a lock-out); a
// limiter that admits one request per window, every window, only
// under-admits. Safety holds for all three (at most L in any window),
// and is said apart.
func TestVerifyLivenessCause(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file   string
		args   []string
		window time.Duration
		cause  measure.LivenessCause
		detail string
	}{
		{"strict-gcra.lua", []string{"{now_us}", "{window_us}", "{limit}", "{cost}"}, time.Minute, measure.CostAboveBurst, "requests of cost ≥ 2 were never admitted"},
		{"strict-gcra.lua", []string{"{now_us}", "{window_us}", "{limit}", "{cost}"}, time.Hour, measure.CostAboveBurst, "requests of cost ≥ 2 were never admitted"},
		{"pushout-window.lua", []string{"{limit}", "{window_ms}", "{cost}"}, time.Minute, measure.LockOut, "to the end of the trial"},
		{"pushout-window.lua", []string{"{limit}", "{window_ms}", "{cost}"}, time.Hour, measure.LockOut, "to the end of the trial"},
		{"one-per-window.lua", nowWinLimID, time.Minute, measure.UnderAdmission, "admissions came throughout"},
	}
	for _, c := range cases {
		t.Run(c.file+"/"+limit.FormatWindow(c.window), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			l := limit.Limit{Count: 20, Window: c.window}
			sc := custom.ScriptConfig{Name: c.file, Source: string(src), Args: c.args, Limit: l}
			if c.file != "one-per-window.lua" {
				if sc.Allowed, err = custom.ParseReplyPredicate("reply[1] == 1"); err != nil {
					t.Fatal(err)
				}
			}
			lim, err := custom.NewScript(srv.Client(), sc)
			if err != nil {
				t.Fatal(err)
			}
			cfg := verifyConfig(l)
			cfg.MinFidelity = verify.DefaultMinFidelity
			started := time.Now()
			rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(started); took > 5*time.Second {
				t.Errorf("took %s, want under 5s", took)
			}
			sf, lv := rep.Safety, rep.Liveness
			if rep.Verdict != measure.Starved || sf == nil || sf.Verdict != measure.Holds || sf.MaxRatio > 1 || lv == nil ||
				lv.Verdict != measure.Starved || lv.Cause != c.cause || !strings.Contains(lv.Detail, c.detail) {
				t.Fatalf("verdict %s, safety %+v, liveness %+v; want starved, safety holding, liveness %s (%q)", rep.Verdict, sf, lv, c.cause, c.detail)
			}
			if ce := rep.CounterExample; ce.Cause != lv.Cause || ce.CauseDetail != lv.Detail {
				t.Errorf("counter-example cause %s %q, want the liveness part's", ce.Cause, ce.CauseDetail)
			}
		})
	}
}
