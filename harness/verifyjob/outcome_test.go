package verifyjob

import (
	"errors"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// Outcome: a verdict that holds says nothing; violated and starved fail
// (exit 1) with the counter-example pointed at; inconclusive does not fail
// and says why; a replay says "again" and no notes. The message points
// at the report where it was printed: above, in the JSON, or nowhere.
func TestOutcome(t *testing.T) {
	cases := []struct {
		verdict    measure.Verdict
		replay     bool
		shown      Shown
		msg        string
		wantFailed bool
	}{
		{measure.Holds, false, Above, "", false},
		{measure.Holds, true, Above, "", false},
		{measure.Violated, false, Above, "fw violated (see the counter-example above)", true},
		{measure.Starved, false, Above, "fw starved (see the counter-example above)", true},
		{measure.Violated, true, Above, "fw violated again (see the counter-example above)", true},
		{measure.Inconclusive, false, Above, "fw: inconclusive — 2 of 10 calls failed; the first: boom (see the notes above)", false},
		{measure.Inconclusive, true, Above, "fw: inconclusive — 2 of 10 calls failed; the first: boom", false},
		{measure.Violated, false, InJSON, `fw violated (see "counter_example" in the JSON on stdout)`, true},
		{measure.Violated, true, InJSON, `fw violated again (see "counter_example" in the JSON on stdout)`, true},
		{measure.Inconclusive, false, InJSON, `fw: inconclusive — 2 of 10 calls failed; the first: boom (see "notes" in the JSON on stdout)`, false},
		{measure.Violated, false, Nowhere, "fw violated", true},
	}
	for i, c := range cases {
		rep := &measure.VerifyReport{Target: "fw", Verdict: c.verdict, Errors: 2, Decisions: 10, ErrorSamples: []string{"boom"},
			CounterExample: &measure.CounterExample{Kind: c.verdict}, Header: measure.Header{Notes: []string{"a note"}}}
		msg, failed := Outcome(rep, c.replay, GateBoth, c.shown)
		if msg != c.msg || failed != c.wantFailed {
			t.Errorf("case %d (%s, replay %v): got %q, failed %v; want %q, %v", i, c.verdict, c.replay, msg, failed, c.msg, c.wantFailed)
		}
	}
}

// A message never points at what the report does not hold: a failure
// without a counter-example (its own or a limit's), an inconclusive
// report without notes.
func TestOutcomeNothingToPointAt(t *testing.T) {
	perLimit := []measure.LimitResult{{}, {CounterExample: &measure.CounterExample{Kind: measure.Violated}}}
	cases := []struct {
		rep  *measure.VerifyReport
		want string
	}{
		{&measure.VerifyReport{Target: "fw", Verdict: measure.Violated}, "fw violated again"},
		{&measure.VerifyReport{Target: "fw", Verdict: measure.Starved}, "fw starved again"},
		{&measure.VerifyReport{Target: "fw", Verdict: measure.Violated, PerLimit: perLimit}, "fw violated again (see the counter-example above)"},
	}
	for i, c := range cases {
		for _, shown := range []Shown{Above, InJSON} {
			msg, _ := Outcome(c.rep, true, GateBoth, shown)
			want := c.want
			if shown == InJSON && strings.Contains(want, "(see") {
				want = strings.Replace(want, "(see the counter-example above)", `(see "counter_example" in the JSON on stdout)`, 1)
			}
			if msg != want {
				t.Errorf("case %d, shown %d: got %q, want %q", i, shown, msg, want)
			}
		}
	}
	rep := &measure.VerifyReport{Target: "fw", Verdict: measure.Inconclusive, Errors: 2, Decisions: 10, ErrorSamples: []string{"boom"}}
	if msg, _ := Outcome(rep, false, GateBoth, Above); strings.Contains(msg, "see") {
		t.Errorf("inconclusive without notes: %q points at them", msg)
	}
}

// A gate fails on its part alone: safety on a violation, liveness on a
// gated starvation (from the report's liveness part), both on either.
func TestOutcomeGate(t *testing.T) {
	starved := &measure.Liveness{Verdict: measure.Starved, Gated: true}
	reported := &measure.Liveness{Verdict: measure.Starved} // --min-fidelity 0: not gated
	cases := []struct {
		verdict  measure.Verdict
		liveness *measure.Liveness
		gate     Gate
		failed   bool
	}{
		{measure.Starved, starved, GateBoth, true},
		{measure.Starved, starved, GateSafety, false},
		{measure.Starved, starved, GateLiveness, true},
		{measure.Violated, reported, GateSafety, true},
		{measure.Violated, reported, GateLiveness, false},
		{measure.Violated, starved, GateLiveness, true},
		{measure.Violated, nil, GateBoth, true},
		{measure.Starved, nil, GateLiveness, true}, // a replay's report: its verdict
	}
	for i, c := range cases {
		rep := &measure.VerifyReport{Target: "fw", Verdict: c.verdict, Liveness: c.liveness}
		msg, failed := Outcome(rep, false, c.gate, Above)
		if failed != c.failed || (msg != "") != c.failed {
			t.Errorf("case %d (%s, gate %s): got %q, failed %v; want failed %v", i, c.verdict, c.gate, msg, failed, c.failed)
		}
	}
	if g, err := ParseGate("safety"); g != GateSafety || err != nil {
		t.Errorf("ParseGate(safety) = %q, %v", g, err)
	}
	if _, err := ParseGate("all"); err == nil || !strings.Contains(err.Error(), "gate") {
		t.Errorf("ParseGate(all): got %v, want an error naming gate", err)
	}
}

// NewReplay takes the target it is given over the one the record names,
// and refuses an HTTP endpoint after the record's limits are checked.
func TestNewReplay(t *testing.T) {
	rec := &measure.VerifyReport{Limit: 5, WindowMS: 1000}
	rec.Repro.Seed = 7
	cfg := verify.Config{Clients: 1, Timeout: 1, MaxOutage: 1}
	r, err := NewReplay(rec, "x/verify.json", &targets.Spec{Name: "fixed-window", Algorithm: "fixed-window"}, cfg)
	if err != nil || r.Spec.Algorithm != "fixed-window" || r.Config.Seed != 7 || len(r.Config.Limits) != 1 || r.Config.Limits[0].Count != 5 {
		t.Fatalf("got %+v, %v; want the given spec, seed 7 and the record's one limit", r, err)
	}
	if _, err := NewReplay(rec, "x/verify.json", &targets.Spec{Name: "api", HTTP: "http://127.0.0.1:1/"}, cfg); !errors.Is(err, ErrHTTPReplay) {
		t.Errorf("an HTTP target: got %v, want ErrHTTPReplay", err)
	}
}
