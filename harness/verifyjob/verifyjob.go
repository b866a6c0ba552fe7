// Package verifyjob runs one target's verification as `ratelab verify`
// does, with the files it leaves: the results directory, the decision
// file, verify.json and report.html (publish.FinishVerify), and the
// counter-example's trace as a traffic file.
package verifyjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/publish"
)

// TraceCSV is the traffic file of the counter-example's trace beside
// verify.json.
const TraceCSV = "counter-example.csv"

// Job is one target's verification and where its files go.
type Job struct {
	// Config is verify.Run's; Run sets its Log and Progress.
	Config verify.Config
	// Target is recorded in the report (measure.VerifyReport.TargetSpec),
	// complete or not; nil records none.
	Target *measure.TargetSpec
	// Out is the results directory, created when missing; "" writes no
	// files but the decision file.
	Out string
	// Decisions is the decision file (publish.CreateDecisionFile); ""
	// for none.
	Decisions string
}

// Run verifies lim on rd (nil for an HTTP target) with j.Config, its
// progress on progress, and writes j's files. It returns the report
// (valid when the verification ran to its end; its strings cleaned for a
// terminal, input.CleanStrings, once its files are written too) and one
// error: the verification's, with the decision file's joined (j.Out's
// verify.json then says why it stopped, marked incomplete; a script the
// guard refused wraps guard.ErrRefused, as a run's does), joined
// (outdir.Join) with an *outdir.WriteError, the error creating or writing
// the files: a *field.Error naming "out" or "decisions" when they could
// not be created, and then nothing ran; or the trace's, and then nothing
// more was written. outdir.Split takes the two apart. Not safe for
// concurrent use on one Out.
func (j Job) Run(ctx context.Context, rd *server.Redis, lim algorithms.Limiter, progress io.Writer) (*measure.VerifyReport, error) {
	cfg := j.Config
	if j.Out != "" {
		// created before the run, so that the decision log and every file the
		// run writes have their directory
		if err := os.MkdirAll(j.Out, 0o755); err != nil {
			return nil, outdir.WriteFailed(field.Errorf("out", "%w", err))
		}
	}
	if j.Decisions != "" {
		var err error
		if cfg.Log, err = publish.CreateDecisionFile(j.Decisions); err != nil {
			return nil, outdir.WriteFailed(err)
		}
	}
	cfg.Progress = progress
	started := time.Now()
	rep, err := verify.Run(ctx, rd, lim, cfg)
	if rep != nil {
		rep.TargetSpec = j.Target
		if err := writeTraceCSV(j.Out, rep.CounterExample); err != nil {
			return nil, outdir.WriteFailed(err)
		}
	}
	runErr, werr := outdir.Split(publish.FinishVerify(j.Out, cfg.Log, rep, err, func(err error) *measure.VerifyReport {
		inc := verify.Incomplete(rd, lim, cfg, started, err)
		inc.TargetSpec = j.Target
		return inc
	}))
	switch {
	case guard.IsRefusal(runErr) && !errors.Is(runErr, guard.ErrRefused):
		runErr = fmt.Errorf("%w: %v", guard.ErrRefused, runErr)
	case runErr == nil && werr == nil:
		input.CleanStrings(rep) // replies of a user's script or endpoint, shown in the tables
		rep.Dir = j.Out
	}
	return rep, outdir.Join(runErr, werr)
}

// Gate is which part of a verdict fails a verification (exit 1): both
// (the zero Gate and GateBoth), safety alone or liveness alone.
type Gate string

// Gates.
const (
	// GateBoth fails on any failure the report's verdict holds: a
	// violation, a starvation when a minimum fidelity was asked for,
	// interference when isolation was checked.
	GateBoth Gate = "both"
	// GateSafety fails on a violation alone ("no 2x burst").
	GateSafety Gate = "safety"
	// GateLiveness fails on a gated starvation or interference alone.
	GateLiveness Gate = "liveness"
)

// Gates are the gates a command line takes, in the order it lists them.
var Gates = []Gate{GateBoth, GateSafety, GateLiveness}

// ParseGate reads a gate's name; another name is a *field.Error naming
// "gate".
func ParseGate(name string) (Gate, error) {
	for _, g := range Gates {
		if string(g) == name {
			return g, nil
		}
	}
	return "", field.Errorf("gate", "want both, safety or liveness, got %q", name)
}

// failure is the failure of rep that gate fails on, if any: the verdict
// for GateBoth; a violation for GateSafety; a gated starvation or
// interference for GateLiveness (from rep.Liveness, or the verdict of a
// report without it, such as a replay's).
func (gate Gate) failure(rep *measure.VerifyReport) (measure.Verdict, bool) {
	v := rep.Verdict
	switch gate {
	case GateSafety:
		return v, v == measure.Violated
	case GateLiveness:
		if lv := rep.Liveness; lv != nil {
			return lv.Verdict, lv.Gated && (lv.Verdict == measure.Starved || lv.Verdict == measure.Interfered)
		}
		return v, v == measure.Starved || v == measure.Interfered
	}
	return v, true
}

// Shown is where a report went before Outcome's message, so that the
// message points at it: Above, the text printed on stdout; InJSON, the
// JSON object on stdout; Nowhere, neither (the message stands alone).
type Shown int

// Where a report went.
const (
	Above Shown = iota
	InJSON
	Nowhere
)

// see is the pointer to what (a "counter-example", the "notes") where
// shown has put it: " (see the counter-example above)"; "" for Nowhere.
func (shown Shown) see(what, key string) string {
	switch shown {
	case Above:
		return " (see the " + what + " above)"
	case InJSON:
		return " (see " + key + " in the JSON on stdout)"
	}
	return ""
}

// Outcome is what rep's verdict means to the command that verified it,
// under gate: "" and not failed when it holds, or when its failure is of
// a part gate leaves out; the limiter failed (exit 1), with the message
// saying so, when it was violated, starved or interfered and gate covers
// it; else inconclusive, not failed (exit 2: nothing was checked, or
// calls failed; no verdict on the limiter). replay says rep is
// verify.Replay's, its counter-example sent again; shown says where the
// report was printed, which the message points at.
func Outcome(rep *measure.VerifyReport, replay bool, gate Gate, shown Shown) (msg string, failed bool) {
	switch rep.Verdict {
	case measure.Holds:
		return "", false
	case measure.Inconclusive:
		if replay {
			return fmt.Sprintf("%s: inconclusive — %s", rep.Target, rep.Reason()), false
		}
		if len(rep.Notes) == 0 {
			shown = Nowhere // nothing to point at
		}
		return fmt.Sprintf("%s: inconclusive — %s%s", rep.Target, rep.Reason(), shown.see("notes", `"notes"`)), false
	}
	v, fails := gate.failure(rep)
	if !fails {
		return "", false
	}
	again := ""
	if replay {
		again = " again"
	}
	if !hasCounterExample(rep) {
		shown = Nowhere // a report without one (a verify.json of an older ratelab, a liveness part without a trace)
	}
	return fmt.Sprintf("%s %s%s%s", rep.Target, v, again, shown.see("counter-example", `"counter_example"`)), true
}

// hasCounterExample reports whether rep holds a counter-example, its own
// or one of a limit's: what a failure's message may point at.
func hasCounterExample(rep *measure.VerifyReport) bool {
	if rep.CounterExample != nil {
		return true
	}
	for _, l := range rep.PerLimit {
		if l.CounterExample != nil {
			return true
		}
	}
	return false
}

// writeTraceCSV writes the trace of ce (if any) to dir's TraceCSV and
// names it in the trace; nothing when dir is "" or there is no trace.
func writeTraceCSV(dir string, ce *measure.CounterExample) error {
	if dir == "" || ce == nil || ce.Trace == nil {
		return nil
	}
	if err := outdir.WriteFile(filepath.Join(dir, TraceCSV), ce.Trace.WriteCSV); err != nil {
		return err
	}
	ce.Trace.CSV = TraceCSV
	return nil
}
