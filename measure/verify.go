package measure

import "fmt"

// Verdict is the outcome of a verification, of one family or of one trial.
type Verdict string

// Verdicts of a verification.
const (
	Holds    Verdict = "holds"
	Violated Verdict = "violated"
	Starved  Verdict = "starved"
	// Interfered: traffic on one key limited another.
	Interfered Verdict = "interfered"
	Skipped    Verdict = "skipped"
	// Inconclusive: no verdict on the limiter: no trial could be run and
	// judged (every family skipped), or calls failed (script errors,
	// timeouts, replies of the wrong shape); VerifyReport.Reason says which.
	Inconclusive Verdict = "inconclusive"
)

// Reason says in one phrase why a report is Inconclusive: "3 of 1200 calls
// failed; the first: <error>" when calls failed, else "no trial could be
// run and judged". Empty for any other verdict.
func (r *VerifyReport) Reason() string {
	switch {
	case r.Verdict != Inconclusive:
		return ""
	case r.Errors > 0:
		first := "(no sample kept)"
		if len(r.ErrorSamples) > 0 {
			first = r.ErrorSamples[0]
		}
		return fmt.Sprintf("%d of %d calls failed; the first: %s", r.Errors, r.Decisions, first)
	}
	return "no trial could be run and judged"
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	// Header says how the verification was made (Command "verify"),
	// flattened into the JSON. Complete is false when it stopped before a
	// verdict (Ctrl-C, Redis gone, the target's error); Error then says
	// why. Notes are sentences about the verification as a whole (absolute
	// key expiries found, what is reported but not gated).
	Header
	Target    string `json:"target"`
	LimitDesc string `json:"limit_desc"`
	Limit     int64  `json:"limit"`
	WindowMS  int64  `json:"window_ms"`
	// Verdict is Holds, or the most serious failure found: Violated, then
	// Starved, then Interfered (these two only when asked for: a minimum
	// fidelity, isolation checked), or Inconclusive when nothing could be
	// judged or any call failed (Errors > 0: a failed call is never a
	// verdict, not even beside a counter-example; see Reason).
	Verdict Verdict `json:"verdict"`
	// Clock says how the target was driven: "virtual" (injected clock, key
	// TTLs emulated on it), "virtual+real" (the same, and the real-time
	// families again on the wall clock: --real-time), "redis" (the script
	// reads Redis TIME: all in real time) or "real" (HTTP).
	Clock string `json:"clock"`
	// Limits lists every limit checked at once when there are several
	// ("10 per 1s", "120 per 1m0s"); empty for one (Limit per WindowMS).
	Limits   []string       `json:"limits,omitempty"`
	Families []FamilyResult `json:"families"`
	// CounterExample is the evidence of the first failure; nil when it holds.
	CounterExample *CounterExample `json:"counter_example,omitempty"`
	// SkewSensitivity is the most accepted in one true window, as a multiple
	// of the limit, with client clocks SkewDeltaMS apart each way; zero when
	// the target reads the server's clock (skew does not apply).
	SkewDeltaMS     float64  `json:"skew_delta_ms"`
	SkewSensitivity float64  `json:"skew_sensitivity"`
	Decisions       int64    `json:"decisions"`
	Errors          int64    `json:"errors"`
	ErrorSamples    []string `json:"error_samples,omitempty"`
}

// FamilyResult summarizes one adversarial family.
type FamilyResult struct {
	Family  string  `json:"family"`
	Trials  int     `json:"trials"`
	Verdict Verdict `json:"verdict"`
	// MaxRatio is the largest max_in_window / limit over the family's
	// trials and keys: Row.Ratio's quotient, where max_in_window counts
	// only accepted cost that certainly fits in one window (in real time,
	// a decision is known only to lie between send and receive; see
	// CounterExample). Above 1: the family is Violated.
	MaxRatio float64 `json:"max_ratio"`
	// MinFidelity is the lowest accepted / ideal of its liveness trials (0 when none).
	MinFidelity float64 `json:"min_fidelity,omitempty"`
	// Mode is "virtual" (its trials ran in virtual time), "real" (in real
	// time) or "virtual+real" (both ran); the words are algorithms.Clock's.
	Mode string `json:"mode"`
	Note string `json:"note,omitempty"`
}

// CounterExample is a set of accepted decisions that breaks the property.
type CounterExample struct {
	Family string `json:"family"`
	Trial  string `json:"trial"`
	// Kind is Violated, Starved or Interfered.
	Kind Verdict `json:"kind"`
	// Accepted is the cost accepted inside the window [StartUS, EndUS] (µs
	// from the trial's aligned window boundary); Limit is what was allowed.
	Accepted int64 `json:"accepted"`
	Limit    int64 `json:"limit"`
	// WindowMS is the window of the limit that broke, when several limits
	// are checked at once (zero: the report's).
	WindowMS int64 `json:"window_ms,omitempty"`
	StartUS  int64 `json:"start_us"`
	EndUS    int64 `json:"end_us"`
	// Fidelity and Ideal are set for starvation.
	Ideal    int64   `json:"ideal,omitempty"`
	Fidelity float64 `json:"fidelity,omitempty"`
	// Decisions are the accepted decisions inside the window (at most 200).
	Decisions []Evidence `json:"decisions"`
	// Explain is one sentence for people.
	Explain string `json:"explain"`
	// Schedule and Interleaving are set for a race (a client-side
	// limiter): the scheduler's policy and seed ("reads-first",
	// "pct(seed 7, depth 3)") and the round trips in the order they went,
	// up to the last decision of the counter-example (at most 400).
	Schedule     string `json:"schedule,omitempty"`
	Interleaving []Step `json:"interleaving,omitempty"`
}

// Evidence is one accepted decision of a counter-example, as verify.json
// holds it: a Record cut to what the counter-example needs, its times from
// the trial's boundary instead of Unix µs.
type Evidence struct {
	Key  string `json:"key"`
	Cost int64  `json:"cost"`
	// AtUS is its time in µs from the aligned boundary: the injected time,
	// or, in real time, when it was sent (RecvUS when it was answered).
	AtUS   int64 `json:"at_us"`
	RecvUS int64 `json:"recv_us,omitempty"`
	Client int   `json:"client"`
}
