package verify_test

import (
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

// Liveness by default (a command line's DefaultMinFidelity): a limiter
// that accepts nothing, or one request per window, is starved; the exact
// sliding log and a shaping GCRA (about 0.75 of the ideal) pass; a minimum
// fidelity of 0 turns the check off.
func TestVerifyDefaultMinFidelity(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	cases := []struct {
		file        string
		minFidelity float64
		want        measure.Verdict
	}{
		{"accepts-nothing.lua", verify.DefaultMinFidelity, measure.Starved},
		{"one-per-window.lua", verify.DefaultMinFidelity, measure.Starved},
		{"sliding-log.lua", verify.DefaultMinFidelity, measure.Holds},
		{"gcra.lua", verify.DefaultMinFidelity, measure.Holds},
		{"accepts-nothing.lua", 0, measure.Holds},
	}
	l := limit.Limit{Count: 20, Window: 500 * time.Millisecond}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			lim, err := custom.NewScriptLimiter(srv.Client(), c.file, string(src), nowWinLimID, 1, l)
			if err != nil {
				t.Fatal(err)
			}
			cfg := verifyConfig(l)
			cfg.MinFidelity = c.minFidelity
			rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != c.want {
				t.Fatalf("verdict %s, want %s; overload %+v, counter-example %+v", rep.Verdict, c.want, family(t, rep, "overload"), rep.CounterExample)
			}
			if ce := rep.CounterExample; c.want == measure.Starved {
				if ce.Fidelity >= c.minFidelity || ce.MinFidelity != c.minFidelity || ce.Trace == nil {
					t.Errorf("counter-example %+v: want a fidelity under %g, the floor and a trace", ce, c.minFidelity)
				}
				again, err := verify.Replay(ctx, srv.Redis, lim, cfg, ce)
				if err != nil || again.Verdict != measure.Starved {
					t.Errorf("replay: %v, verdict %v", err, again)
				}
			}
		})
	}
}

// A limiter whose rate lives in a hash written by a set-up call: without
// the set-up it reads no rate and admits everything (violated); with it,
// run once per key before the key's first call, on the same keys and
// clock, it holds.
func TestVerifySetup(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	l := limit.Limit{Count: 20, Window: 500 * time.Millisecond}
	for _, c := range []struct {
		setup string
		want  measure.Verdict
	}{{"", measure.Violated}, {read("set-rate.lua"), measure.Holds}} {
		lim, err := custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "rate-from-hash.lua", Source: read("rate-from-hash.lua"),
			Keys: []string{"{key}", "{key}:cfg"}, Args: nowWinLimID, Limit: l, Setup: c.setup})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := verify.Run(ctx, srv.Redis, lim, verifyConfig(l))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != c.want || rep.Errors != 0 {
			t.Errorf("set-up %t: verdict %s with %d errors %v, want %s; counter-example %+v", c.setup != "", rep.Verdict, rep.Errors, rep.ErrorSamples, c.want, rep.CounterExample)
		}
	}
}

// A violation that does not fail again when its requests are replayed on
// fresh keys at the same virtual instants is no verdict (Inconclusive,
// Unreproduced): what broke the limit was not the limiter's answer to its
// input. warm-up-free.lua lets its first 60 calls through, whatever their
// key; the same script without its warm-up spent is the correct log.
func TestVerifyUnreproducedIsInconclusive(t *testing.T) {
	t.Parallel()
	l := limit.Limit{Count: 20, Window: time.Second}
	src, err := os.ReadFile(filepath.Join("testdata", "warm-up-free.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().Del(ctx, "warm-up-free:calls").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Client().Del(ctx, "warm-up-free:calls") })
	lim, err := custom.NewScriptLimiter(srv.Client(), "warm-up-free.lua", string(src), nowWinLimID, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(ctx, srv.Redis, lim, verifyConfig(l))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != measure.Inconclusive || !rep.Unreproduced || rep.Reason() == "" {
		t.Fatalf("verdict %s (unreproduced %v, reason %q), want inconclusive: the violation does not replay; counter-example %+v",
			rep.Verdict, rep.Unreproduced, rep.Reason(), rep.CounterExample)
	}
}
