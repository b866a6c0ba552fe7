package execlimiter_test

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom/execlimiter"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// verifyAdapter verifies the adapter of command at 3 per 1s, with 2
// clients, 2 processes and no search (a few thousand decisions), and
// fails t on an error.
func verifyAdapter(t *testing.T, command string) *measure.VerifyReport {
	t.Helper()
	l := limit.Limit{Count: 3, Window: time.Second}
	lim, err := execlimiter.New(ctx, srv.Client(), execlimiter.Config{Command: command, Limit: l, Prefix: srv.Key(t) + ":ep:", Processes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := lim.Close(); err != nil {
			t.Error(err)
		}
	}()
	rep, err := verify.Run(ctx, srv.Redis, lim, verify.Config{Limits: []limit.Limit{l}, Clients: 2, Budget: -1, ShrinkBudget: verify.DefaultShrinkBudget, MinFidelity: verify.DefaultMinFidelity, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors > 0 {
		t.Fatalf("%d calls failed: %v", rep.Errors, rep.ErrorSamples)
	}
	return rep
}

// family returns rep's row of family name.
func family(t *testing.T, rep *measure.VerifyReport, name string) measure.FamilyResult {
	t.Helper()
	for _, f := range rep.Families {
		if f.Family == name {
			return f
		}
	}
	t.Fatalf("no %s family in the report", name)
	return measure.FamilyResult{}
}

// Libraries, unchanged, through their adapters. Python's limits: the
// fixed window (a counter whose TTL starts at the first hit) lets nearly
// 2L through around its expiry; the moving window holds; the elastic
// fixed window holds the limit (every hit, even a denied one, pushes the
// expiry back, so a new count starts only after a whole window of
// silence) but locks out a client that keeps sending. Ruby's
// Rack::Attack: windows named by the clock's multiples of the period let
// 2L through across a boundary.
func TestVerifyLibraryAdapters(t *testing.T) {
	testenv.SkipUnderRace(t) // tables of verdicts: the race detector watches the pool in the other tests
	t.Parallel()
	cases := []struct {
		name     string
		command  func(t *testing.T) string
		verdict  measure.Verdict
		safety   measure.Verdict
		minRatio float64
	}{
		{"limits fixed-window", limitsAdapter("fixed-window"), measure.Violated, measure.Violated, 1.5},
		{"limits moving-window", limitsAdapter("moving-window"), measure.Holds, measure.Holds, 1},
		{"limits fixed-window-elastic-expiry", limitsAdapter("fixed-window-elastic-expiry"), measure.Starved, measure.Holds, 1},
		{"rack-attack throttle", func(t *testing.T) string { return ruby(t) + " ../../docs/adapters/rack_attack_adapter.rb" }, measure.Violated, measure.Violated, 1.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep := verifyAdapter(t, c.command(t))
			if rep.Safety == nil {
				t.Fatal("the report has no safety verdict")
			}
			if rep.Verdict != c.verdict || rep.Safety.Verdict != c.safety {
				t.Errorf("verdict %s, safety %s; want %s, %s", rep.Verdict, rep.Safety.Verdict, c.verdict, c.safety)
			}
			if worst := rep.Safety.MaxRatio; worst < c.minRatio || c.safety == measure.Holds && worst > 1 {
				t.Errorf("worst ratio %.2f; want >= %.2f (and <= 1 when safety holds)", worst, c.minRatio)
			}
		})
	}
}

// limitsAdapter is the command of the Python limits adapter with strategy.
func limitsAdapter(strategy string) func(t *testing.T) string {
	return func(t *testing.T) string { return python(t) + " ../../docs/adapters/limits_adapter.py " + strategy }
}

// ruby is a ruby with Debian's rack-attack and redis gems.
func ruby(t *testing.T) string {
	return testenv.Interpreter(t, "exec-adapters", []string{"-e", `require "rack/attack"; require "redis"`}, "/usr/bin/ruby", "ruby")
}

// The race family gates the adapter's round trips at the endpoint: a
// sliding log that checks, then acts (ZCARD, then ZADD) lets two clients
// both count under the limit and both add; adding first, then counting,
// holds.
func TestVerifyRaceTwins(t *testing.T) {
	testenv.SkipUnderRace(t)
	t.Parallel()
	py := python(t)
	t.Run("check-then-act", func(t *testing.T) {
		t.Parallel()
		rep := verifyAdapter(t, py+" ../../docs/adapters/sliding_log_adapter.py check-then-act")
		if f := family(t, rep, verify.RaceFamily); f.Verdict != measure.Violated {
			t.Errorf("race: %s (max %.2f), want violated", f.Verdict, f.MaxRatio)
		}
		ce := rep.CounterExample
		if ce == nil {
			t.Fatal("no counter-example")
		}
		if ce.Family == verify.RaceFamily && len(ce.Interleaving) == 0 {
			t.Error("the race's counter-example shows no interleaving")
		}
	})
	t.Run("add-then-check", func(t *testing.T) {
		t.Parallel()
		rep := verifyAdapter(t, py+" ../../docs/adapters/sliding_log_adapter.py add-then-check")
		if f := family(t, rep, verify.RaceFamily); f.Verdict != measure.Holds || f.Trials == 0 {
			t.Errorf("race: %s in %d trials (max %.2f), want holds", f.Verdict, f.Trials, f.MaxRatio)
		}
		if rep.Verdict != measure.Holds {
			t.Errorf("verdict %s, want holds", rep.Verdict)
		}
	})
}
