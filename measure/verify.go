package measure

import (
	"fmt"
	"io"
	"strings"
	"time"
)

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
	case r.Unreproduced:
		return "the counter-example did not fail again when replayed on fresh keys in virtual time"
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
	// Safety and Liveness are the verdict told in its two parts: was the
	// limit ever exceeded, and was legitimate traffic admitted. Both are
	// set on a report that ran to its end; nil in files of older ratelabs.
	Safety   *Safety   `json:"safety,omitempty"`
	Liveness *Liveness `json:"liveness,omitempty"`
	// PerLimit is the verdict on each limit alone, in the order given,
	// when several limits are checked at once (Limits); empty for one.
	// Families and CounterExample above merge them: the worst of all.
	PerLimit []LimitResult `json:"per_limit,omitempty"`
	// CounterExample is the evidence of the most serious failure found
	// (see CounterExample); nil when it holds.
	CounterExample *CounterExample `json:"counter_example,omitempty"`
	// TargetSpec is the whole target verified, as `ratelab verify
	// --replay` rebuilds it; nil in files of older ratelabs and for a
	// target the caller did not describe.
	TargetSpec *TargetSpec `json:"target_spec,omitempty"`
	// SkewSensitivity is the most accepted in one true window, as a multiple
	// of the limit, with client clocks SkewDeltaMS apart each way; zero when
	// the target reads the server's clock (skew does not apply).
	SkewDeltaMS     float64  `json:"skew_delta_ms"`
	SkewSensitivity float64  `json:"skew_sensitivity"`
	Decisions       int64    `json:"decisions"`
	Errors          int64    `json:"errors"`
	ErrorSamples    []string `json:"error_samples,omitempty"`
	// Dir is the directory this report was written to (verify.json and
	// the trace's CSV beside it), as the caller named it, so that what is
	// printed can name the files; "" when it was not written. Not saved.
	Dir string `json:"-"`
	// Unreproduced: a violation was found but did not fail again when its
	// requests were replayed on fresh keys at the same virtual instants:
	// it depended on more than the limiter and its input (a loaded
	// machine), so the verdict is Inconclusive, never a false alarm.
	Unreproduced bool `json:"unreproduced,omitempty"`
}

// Safety is the verdict on "never more than L in any W" alone.
type Safety struct {
	// Verdict is Holds, Violated, or Inconclusive when the report is
	// (calls failed, a violation did not replay, nothing was judged).
	Verdict Verdict `json:"verdict"`
	// MaxRatio is the largest max_in_window / limit over the families that
	// are part of the verdict (the skew family only with a skew asked
	// for), over every limit.
	MaxRatio float64 `json:"max_ratio"`
}

// Liveness is the verdict on whether legitimate traffic was admitted:
// under sustained overload, accepted / ideal (an exact sliding-window log
// on the same requests) at or above Floor; with isolation checked, no
// request denied because of another key's traffic.
type Liveness struct {
	// Verdict is Holds, Starved, Interfered, Skipped (no liveness trial
	// ran) or Inconclusive (calls failed).
	Verdict Verdict `json:"verdict"`
	// Gated says the verdict decides the exit code (a minimum fidelity, or
	// isolation, was asked for); false: reported only, judged at Floor.
	Gated bool `json:"gated"`
	// MinFidelity is the lowest accepted / ideal of the liveness trials;
	// Floor the fidelity they were judged against.
	MinFidelity float64 `json:"min_fidelity"`
	Floor       float64 `json:"floor"`
	// Cause classifies a starvation from its trial's decisions (see
	// LivenessCause); Detail says it in one sentence with its figures.
	// Empty unless Starved.
	Cause  LivenessCause `json:"cause,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// LivenessCause is why a limiter starved its traffic, read from the
// decisions of the starved trial.
type LivenessCause string

// Causes of starvation, in the order they are looked for.
const (
	// CostAboveBurst: every request of some cost or more was denied while
	// cheaper ones were admitted (a burst smaller than the cost: a strict
	// GCRA with burst 1 never admits cost 2).
	CostAboveBurst LivenessCause = "cost-above-burst"
	// LockOut: a key that kept sending was denied for longer than the
	// window (a sliding log admits something in every window of steady
	// overload); a fixed window whose expiry every hit pushes out never
	// lets it back in.
	LockOut LivenessCause = "lock-out"
	// UnderAdmission: neither of the above: admissions came, but too few.
	UnderAdmission LivenessCause = "under-admission"
)

// LimitResult is the verdict on one of several limits checked at once:
// every trial (whichever limit it was built for) judged against this
// limit alone for safety; its own trials for liveness.
type LimitResult struct {
	// Limit is the limit as shown ("600 per 1h"): Count cost units in any
	// window of WindowMS.
	Limit    string `json:"limit"`
	Count    int64  `json:"count"`
	WindowMS int64  `json:"window_ms"`
	// Verdict is Holds or this limit's most serious failure (as
	// VerifyReport.Verdict, without Inconclusive: that is the report's).
	Verdict Verdict `json:"verdict"`
	// MaxRatio is the largest max_in_window / Count of the families that
	// are part of the verdict.
	MaxRatio float64        `json:"max_ratio"`
	Families []FamilyResult `json:"families"`
	// CounterExample is this limit's worst failure; nil when it holds.
	CounterExample *CounterExample `json:"counter_example,omitempty"`
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

// CounterExample is a set of accepted decisions that breaks the property:
// of all the failures found, the worst (the highest accepted / limit for a
// violation, the lowest fidelity for starvation), then, when it ran in
// virtual time, shrunk to a minimal trace that still fails (Trace; Found
// keeps the failure as first found).
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
	// MinFidelity is the floor a starved trial fell under (the
	// verification's minimum fidelity); zero for other kinds.
	MinFidelity float64 `json:"min_fidelity,omitempty"`
	// Cause and CauseDetail classify a starvation (Liveness's); empty for
	// other kinds.
	Cause       LivenessCause `json:"cause,omitempty"`
	CauseDetail string        `json:"cause_detail,omitempty"`
	// Decisions are the accepted decisions inside the window, every one of
	// them, in time order: the last closes the window. For interference:
	// the denied requests.
	Decisions []Evidence `json:"decisions"`
	// Explain is one sentence for people.
	Explain string `json:"explain"`
	// Schedule and Interleaving are set for a race (a client-side
	// limiter): the scheduler's policy and seed ("reads-first",
	// "pct(seed 7, depth 3)") and the round trips in the order they went,
	// up to the last decision of the counter-example (at most 400).
	Schedule     string      `json:"schedule,omitempty"`
	Interleaving []RoundTrip `json:"interleaving,omitempty"`
	// Found is the failure as the trials found it, before shrinking; nil
	// when the counter-example was not shrunk (then it is as found).
	Found *Found `json:"found,omitempty"`
	// Trace is what reproduces the counter-example in virtual time
	// (`ratelab verify --replay`); nil when it cannot be replayed exactly
	// (it was found in real time).
	Trace *Trace `json:"trace,omitempty"`
	// FromHit says the target's windows start at a key's hit, not at
	// aligned boundaries: it reads no clock, so the only time it knows is
	// its keys' expiry (a fixed window from the first hit, one whose
	// expiry every hit pushes out). Its times are then shown from the
	// trace's first request (Origin); the data keep them from the trial's
	// boundary.
	FromHit bool `json:"from_hit,omitempty"`
}

// Origin is the time, µs from the trial's boundary, that c's times are
// shown from: its trace's first request (else its first decision) when
// FromHit, else 0 (the aligned boundary).
func (c *CounterExample) Origin() int64 {
	if !c.FromHit {
		return 0
	}
	if c.Trace != nil && len(c.Trace.Requests) > 0 {
		o := c.Trace.Requests[0].AtUS
		for _, s := range c.Trace.Requests {
			o = min(o, s.AtUS)
		}
		return o
	}
	if len(c.Decisions) > 0 {
		o := c.Decisions[0].AtUS
		for _, d := range c.Decisions {
			o = min(o, d.AtUS)
		}
		return o
	}
	return 0
}

// Ratio is Accepted / Limit: the severity of a violation.
func (c *CounterExample) Ratio() float64 {
	if c.Limit == 0 {
		return 0
	}
	return float64(c.Accepted) / float64(c.Limit)
}

// Found is a violation as a trial found it, before shrinking.
type Found struct {
	// Accepted within [StartUS, EndUS] (µs from the trial's boundary),
	// Ratio = Accepted / the limit.
	Accepted int64   `json:"accepted"`
	StartUS  int64   `json:"start_us"`
	EndUS    int64   `json:"end_us"`
	Ratio    float64 `json:"ratio"`
	// Requests is how many requests the trial had sent when the window
	// closed (the trace before shrinking).
	Requests int `json:"requests"`
	// Decisions are the accepted decisions inside that window, in time
	// order (as CounterExample.Decisions); empty in files of older
	// ratelabs.
	Decisions []Evidence `json:"decisions,omitempty"`
}

// Trace is a replayable sequence of requests: sent in order, each at
// AnchorUS + AtUS on the injected (virtual) clock, to fresh keys, with key
// TTLs on the virtual clock; Allowed is what the target answered when the
// trace was recorded.
type Trace struct {
	// AnchorUS is the Unix µs of At = 0 (the trial's aligned boundary);
	// WindowMS the trial's window, on which the anchor is aligned.
	AnchorUS int64 `json:"anchor_us"`
	WindowMS int64 `json:"window_ms"`
	// SkewUS, when set, is each client's clock skew (client c stamps its
	// requests with true time + SkewUS[c % len]), in µs.
	SkewUS   []int64 `json:"skew_us,omitempty"`
	Requests []Step  `json:"requests"`
	// Shrunk says the trace was shrunk (delta debugging) from FromRequests
	// requests in Replays replays; Minimal that no single request of it
	// can be dropped and still fail (false: the shrinking budget ran out
	// first, or it was not shrunk).
	Shrunk       bool `json:"shrunk"`
	FromRequests int  `json:"from_requests,omitempty"`
	Replays      int  `json:"replays,omitempty"`
	Minimal      bool `json:"minimal"`
	// CSV is the traffic file written beside verify.json with these
	// requests (`ratelab run --traffic` reads it); "" when none was written.
	CSV string `json:"csv,omitempty"`
}

// Step is one request of a Trace.
type Step struct {
	AtUS    int64  `json:"at_us"`
	Key     string `json:"key"`
	Cost    int64  `json:"cost"`
	Client  int    `json:"client"`
	Allowed bool   `json:"allowed"`
}

// TargetSpec is the whole target of a verification: what `ratelab verify
// --replay` builds again. Exactly one of Algorithm, Script and HTTP is
// set; the limits are the Header's Repro.Limits.
type TargetSpec struct {
	Algorithm string `json:"algorithm,omitempty"`
	HTTP      string `json:"http,omitempty"`
	// Exec is an exec adapter's command, ExecDir the directory it runs
	// in ("" for the working directory of ratelab).
	Exec    string `json:"exec,omitempty"`
	ExecDir string `json:"exec_dir,omitempty"`
	// Script is the Lua file's path as given; ScriptSHA1 the SHA-1 of its
	// text (what Redis names it by), checked again on replay.
	Script     string `json:"script,omitempty"`
	ScriptSHA1 string `json:"script_sha1,omitempty"`
	// FCall, when not "", says Script is a function library and names
	// the function each call runs (FCALL).
	FCall string `json:"fcall,omitempty"`
	// Setup is the set-up script's path, SetupSHA1 its SHA-1; "" when none.
	Setup     string `json:"setup,omitempty"`
	SetupSHA1 string `json:"setup_sha1,omitempty"`
	// Keys and Args are the KEYS and ARGV templates.
	Keys []string `json:"keys,omitempty"`
	Args []string `json:"args,omitempty"`
	// Allowed is the reply predicate as written; AllowedWhen the
	// shorthand's integer when the predicate is "the reply is N".
	Allowed     string `json:"allowed,omitempty"`
	AllowedWhen *int64 `json:"allowed_when,omitempty"`
	// Name labels the target (the script's file name by default).
	Name string `json:"name,omitempty"`
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

// WriteCSV writes t's requests as a traffic file of `ratelab run
// --traffic` (CSV with a header row: timestamp, key, cost): each request at
// its absolute time (AnchorUS + AtUS, RFC 3339 in UTC with µs), so a replay
// anchored on the window keeps their places in it. Client skew (SkewUS) is
// not expressible in a traffic file and is left out. Errors are w's.
func (t *Trace) WriteCSV(w io.Writer) error {
	var b strings.Builder
	b.WriteString("timestamp,key,cost\n")
	for _, s := range t.Requests {
		at := time.UnixMicro(t.AnchorUS + s.AtUS).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
		key := s.Key
		if strings.ContainsAny(key, ",\"\n") {
			key = `"` + strings.ReplaceAll(key, `"`, `""`) + `"`
		}
		fmt.Fprintf(&b, "%s,%s,%d\n", at, key, s.Cost)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
