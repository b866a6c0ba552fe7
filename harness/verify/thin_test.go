package verify_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// thinRun verifies testdata script file with args at l, with bursts
// thinned or sent whole (full); gate puts liveness in the verdict.
func thinRun(t *testing.T, file string, args []string, l limit.Limit, full, gate bool) *measure.VerifyReport {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	lim, err := custom.NewScriptLimiter(srv.Client(), file, string(src), args, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verifyConfig(l)
	cfg.FullBursts = full
	// a loaded test machine may take long over a call: no call error here
	cfg.Timeout, cfg.MaxOutage, cfg.AdaptTimeout = 5*time.Second, 10*time.Second, true
	if gate {
		cfg.MinFidelity = 0.5
	}
	cfg.ShrinkBudget = 40_000 // a replay of the overload trial (30,000), a few shrinking steps
	rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 {
		t.Fatalf("%s: %d errors: %v", file, rep.Errors, rep.ErrorSamples)
	}
	return rep
}

// Thinning bursts (harness.Job.Thin, at L >= verify.ThinMinLimit) keeps
// the verdicts of the shapes it could miss, with fewer decisions: a fixed
// window on a lagging clock, whose boundary falls inside a burst it was
// denying (the probes find it accepting again), and a log that records
// denied requests (starved under overload, which is never thinned); each
// family's verdict is the one of the whole bursts and its ratio at most
// 1/64 lower; the corrected twins hold. A thinned counter-example replays
// from what was sent. (The built-in sliding log's thinned runs are
// TestVerifyNoFalseAlarm's, at L = 1,000 and 10,000.)
func TestThinnedBurstsKeepVerdicts(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	lag := "1500" // µs: 3/4 into the second burst of "L ending 1µs before the boundary, L from it"
	cases := []struct {
		name    string
		file    string
		args    []string
		window  time.Duration
		gate    bool // liveness in the verdict
		want    measure.Verdict
		compare bool // verify with whole bursts too, and compare
	}{
		{"lagged fixed window 1h", "lagged-fixed-window.lua", append(nowWinLim[:3:3], lag), time.Hour, false, measure.Violated, true},
		{"lagged fixed window 24h", "lagged-fixed-window.lua", append(nowWinLim[:3:3], lag), 24 * time.Hour, false, measure.Violated, true},
		{"lagged sliding log 24h", "lagged-sliding-log.lua", append(nowWinLimID[:4:4], lag), 24 * time.Hour, false, measure.Holds, false},
		// liveness trials are sent whole: starved as unthinned
		{"records denied", "records-denied.lua", nowWinLimID, time.Hour, true, measure.Starved, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := limit.Limit{Count: 2000, Window: c.window}
			thin := thinRun(t, c.file, c.args, l, false, c.gate)
			if !c.compare {
				if thin.Verdict != c.want {
					t.Fatalf("verdict %s, want %s; notes %q", thin.Verdict, c.want, thin.Notes)
				}
				return
			}
			full := thinRun(t, c.file, c.args, l, true, c.gate)
			if thin.Verdict != c.want || full.Verdict != c.want {
				t.Fatalf("verdict %s thinned, %s whole; want %s; notes %q", thin.Verdict, full.Verdict, c.want, append(thin.Notes, full.Notes...))
			}
			if thin.Decisions >= full.Decisions {
				t.Errorf("%d decisions thinned, %d whole: want fewer", thin.Decisions, full.Decisions)
			}
			for k, f := range full.Families {
				g := thin.Families[k]
				if g.Verdict != f.Verdict || g.MaxRatio < f.MaxRatio-1.0/64 || math.Abs(g.MinFidelity-f.MinFidelity) > 1e-9 {
					t.Errorf("family %s: thinned %s at %.4fx (fidelity %.3f), whole %s at %.4fx (%.3f)",
						f.Family, g.Verdict, g.MaxRatio, g.MinFidelity, f.Verdict, f.MaxRatio, f.MinFidelity)
				}
			}
			t.Logf("%d decisions thinned, %d whole", thin.Decisions, full.Decisions)
			ce := thin.CounterExample
			if c.want != measure.Violated {
				return
			}
			if ce == nil || ce.Trace == nil || !ce.Trace.Shrunk {
				t.Fatalf("no shrunk trace: %v", ce != nil && ce.Trace != nil)
			}
			src, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			lim, err := custom.NewScriptLimiter(srv.Client(), c.file, string(src), c.args, 1, l)
			if err != nil {
				t.Fatal(err)
			}
			again, err := verify.Replay(ctx, srv.Redis, lim, verifyConfig(l), ce)
			if err != nil {
				t.Fatal(err)
			}
			if again.Verdict != measure.Violated || again.CounterExample.Accepted != ce.Accepted {
				t.Errorf("replay: %s; want violated with %d accepted", again.Verdict, ce.Accepted)
			}
		})
	}
}

// What thinning gives up: a limiter whose denials change its state is sent
// fewer of them. One that drops a key's log at its 1000th denial in a row
// is refuted by whole bursts, and by nothing a thinned burst sends (256
// denials, then probes): the thinned verification still finds it, under
// sustained overload (never thinned). Its twin, which only counts the
// denials, holds either way.
func TestThinningMissesDenialState(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	l := limit.Limit{Count: 2000, Window: time.Hour}
	for _, c := range []struct {
		file            string
		want            measure.Verdict
		thinBoundary    measure.Verdict // the boundary family, thinned
		wholeBoundary   measure.Verdict // and sent whole
		thinOverloadBad bool            // the overload family refutes it, thinned
	}{
		{"forgiving-sliding-log.lua", measure.Violated, measure.Holds, measure.Violated, true},
		{"counting-sliding-log.lua", measure.Holds, measure.Holds, measure.Holds, false},
	} {
		t.Run(c.file, func(t *testing.T) {
			thin := thinRun(t, c.file, nowWinLimID, l, false, false)
			if c.want == measure.Holds { // holds thinned: nothing to compare
				if thin.Verdict != c.want {
					t.Errorf("verdict %s, want %s", thin.Verdict, c.want)
				}
				return
			}
			full := thinRun(t, c.file, nowWinLimID, l, true, false)
			tb, fb, ov := family(t, thin, "boundary"), family(t, full, "boundary"), family(t, thin, "overload")
			if thin.Verdict != c.want || full.Verdict != c.want || tb.Verdict != c.thinBoundary || fb.Verdict != c.wholeBoundary ||
				(ov.Verdict == measure.Violated) != c.thinOverloadBad {
				t.Errorf("verdict %s thinned, %s whole; boundary %s thinned, %s whole; overload thinned %s; want %s, %s, %s, %s, violated %v",
					thin.Verdict, full.Verdict, tb.Verdict, fb.Verdict, ov.Verdict, c.want, c.want, c.thinBoundary, c.wholeBoundary, c.thinOverloadBad)
			}
		})
	}
}
