package verify_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// Function libraries in the style of published Functions limiters,
// loaded as written (shebang and register_function as they are), get the
// verdicts of their algorithms on the virtual clock: the fixed window (its
// window from TIME, its counter's EXPIRE) lets 2L through in one window,
// the sliding log (TIME inside, a ZSET) holds, at a minute and an hour.
func TestVerifyFunctionLibraries(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	cases := []struct {
		file, fcall string
		args        []string
		want        measure.Verdict
		ratio       float64 // the safety ratio, found and shrunk alike
	}{
		{"fn-fixed-window.lua", "fixed_window", []string{"{limit}", "{window_s}"}, measure.Violated, 2},
		{"fn-sliding-log.lua", "sliding_log", []string{"{limit}", "{window_s}", "{request_id}"}, measure.Holds, 1},
	}
	for _, c := range cases {
		for _, w := range []time.Duration{time.Minute, time.Hour} {
			t.Run(c.file+"/"+w.String(), func(t *testing.T) {
				t.Parallel()
				src, err := os.ReadFile(filepath.Join("testdata", c.file))
				if err != nil {
					t.Fatal(err)
				}
				l := limit.Limit{Count: 20, Window: w}
				cfg := verifyConfig(l)
				cfg.RunID = server.NewRunID()
				cfg.Budget = -1 // no searching adversary: the families find both verdicts, at half the calls
				spec := targets.Spec{Name: c.file, Script: c.file, Source: string(src), FCall: c.fcall, Args: c.args, Allowed: custom.ReplyIs(1)}
				fns, err := guard.LoadFunctions(ctx, srv.Client(), []targets.Spec{spec}, cfg.RunID)
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := fns.Delete(ctx); err != nil {
						t.Error(err)
					}
				}()
				lim, err := fns.Name(spec).Build(srv.Client(), l)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Errors != 0 {
					t.Fatalf("%d errors: %v", rep.Errors, rep.ErrorSamples)
				}
				if rep.Verdict != c.want || rep.Safety == nil || rep.Safety.MaxRatio != c.ratio {
					t.Errorf("verdict %s, safety %+v, want %s at %.2fx; counter-example %+v", rep.Verdict, rep.Safety, c.want, c.ratio, rep.CounterExample)
				}
				if keys, _ := server.ScanKeys(ctx, srv.Client(), server.KeyPrefix+cfg.RunID+":"); len(keys) != 0 {
					t.Errorf("keys left behind: %v", keys[:min(len(keys), 5)])
				}
			})
		}
	}
}
