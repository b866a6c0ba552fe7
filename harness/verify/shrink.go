package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// Shrinking the counter-example.
//
// The counter-example shown is the worst failure found (summarize), as the
// trial made it: often thousands of requests, of which a handful matter.
// When it was found in virtual time on a Scripted target, its requests are
// replayed on fresh keys, in virtual time with key TTLs on the virtual
// clock, exactly as the trial sent them, and a violation is shrunk by delta
// debugging: requests are dropped while the replayed rest still puts more
// than the limit in one window. In order:
//
//  1. the requests after the one that closed the worst window are dropped
//     (they cannot change the answers before them);
//  2. the first of: the worst window's accepted requests alone, the
//     requests of the window before it and of it, all of them, that still
//     fails;
//  3. the longest run of leading requests that can go: first tried where
//     the rest costs just over the limit (a fixed window's L+1), then by
//     bisection;
//  4. chunks of half, a quarter, ... one request, each dropped when the
//     rest still fails, until no single request can go (Trace.Minimal).
//     A rest that costs no more than the limit cannot fail and is not
//     replayed: a trace of L+1 unit requests is minimal at once.
//
// Every replay costs its requests from a budget (Config.ShrinkBudget): when
// it is spent, the smallest failing trace so far is kept. A fixed window
// shrinks to L+1 requests: L at the end of one window and 1 at the start of
// the next.

// DefaultShrinkBudget is how many calls shrinking a counter-example may
// make when Config.ShrinkBudget is zero.
const DefaultShrinkBudget = 200_000

// maxTraceRequests is the longest trace a counter-example keeps (the
// bound measure.ReadVerify holds a verify.json to).
const maxTraceRequests = measure.MaxTraceRequests

// errBudget says the shrinking budget is spent.
var errBudget = errors.New("shrinking budget spent")

// replayable says why the counter-example of tr cannot be replayed in
// virtual time; "" when it can.
func (s *study) replayable(tr *trialResult) string {
	switch {
	case tr == nil || tr.src == nil:
		return "no trace was kept"
	case tr.mode != "virtual" || !s.caps.InjectsTime:
		return "it was found in real time"
	case !s.emulated():
		return "the target is not a script on Redis"
	case tr.src.count() > maxTraceRequests:
		return fmt.Sprintf("its trace has %d requests, more than %d", tr.src.count(), maxTraceRequests)
	}
	return ""
}

// shrink makes rep's counter-example (that of s.chosen) the one to show:
// for a violation, the smallest trace found that still violates (see
// above), with Found keeping the failure as the trial found it; for
// starvation and interference, the trial's trace as replayed. Either gets
// its Trace. A counter-example that cannot be replayed is left as found,
// with a note saying why. Errors: ctx's, or Redis's.
//
// With several limits, each limit's own counter-example (PerLimit) is
// shrunk the same way, each with its own budget; one that is the report's
// is shrunk once. A limit's violation that does not fail again makes that
// limit's verdict, and the report's, Inconclusive.
func (s *study) shrink(ctx context.Context, rep *measure.VerifyReport) error {
	say := func(what string) func(string) {
		return func(note string) { rep.Notes = append(rep.Notes, what+note) }
	}
	if rep.CounterExample != nil {
		if err := s.shrinkOne(ctx, rep.CounterExample, s.chosen, say("the counter-example "), func() { unreproduced(rep) }); err != nil {
			return err
		}
	}
	for k := range rep.PerLimit {
		lr := &rep.PerLimit[k]
		if lr.CounterExample == nil || lr.CounterExample == rep.CounterExample || k >= len(s.perLimit) {
			continue
		}
		if err := s.shrinkOne(ctx, lr.CounterExample, s.perLimit[k], say(fmt.Sprintf("the counter-example of %s ", lr.Limit)), func() {
			lr.Verdict = measure.Inconclusive
			unreproduced(rep)
		}); err != nil {
			return err
		}
	}
	return nil
}

// shrinkOne shrinks ce, the failure of judgement chosen (see shrink),
// telling note what a person should know ("cannot be replayed ...") and
// calling unrepro when a violation does not fail again.
func (s *study) shrinkOne(ctx context.Context, ce *measure.CounterExample, chosen *trialResult, note func(string), unrepro func()) error {
	if why := s.replayable(chosen); why != "" {
		note("cannot be replayed (" + why + "): it is shown as found")
		return nil
	}
	src := chosen.src
	sh := &shrinker{s: s, src: src, budget: s.cfg.shrinkBudget()}
	if ce.Kind != measure.Violated || s.cfg.ShrinkBudget < 0 {
		// replayed once, whole: a starvation or interference as found, or
		// a violation not to be shrunk (ShrinkBudget < 0) that must still
		// fail again to be a verdict
		sh.budget = src.count()
		tr, jr, err := sh.replay(ctx, src.requests())
		if err != nil {
			return err
		}
		if tr.failure == nil {
			if ce.Kind == measure.Violated {
				unrepro()
				return nil
			}
			note("did not fail again when replayed on fresh keys: it is shown as found, without a trace")
			return nil
		}
		ce.Trace = s.trace(src, jr, false)
		return nil
	}
	s.progress("verify: shrinking the counter-example (%d requests)\n", src.count())
	best, bestTR, bestJR, minimal, err := sh.run(ctx)
	if err != nil {
		return err
	}
	if bestTR == nil {
		// the same requests at the same virtual instants on fresh keys
		// hold: what failed depended on something besides the limiter
		// and its input (a call slowed on a loaded machine, a key gone on
		// the real clock). Never a false alarm: no verdict.
		unrepro()
		return nil
	}
	found := &measure.Found{Accepted: ce.Accepted, StartUS: ce.StartUS, EndUS: ce.EndUS, Ratio: ce.Ratio(), Requests: src.count(),
		Decisions: ce.Decisions}
	f := bestTR.failure
	ce.Accepted, ce.StartUS, ce.EndUS, ce.Decisions = f.Accepted, f.StartUS, f.EndUS, f.Decisions
	ce.Found = found
	ce.Trace = s.trace(src, bestJR, true)
	ce.Trace.FromRequests, ce.Trace.Replays, ce.Trace.Minimal = src.count(), sh.replays, minimal
	what := "minimal: no single request can be dropped"
	if !minimal {
		what = "the shrinking budget ran out before it was minimal"
	}
	ce.Explain = fmt.Sprintf("worst found: %s; shrunk to %d requests (%s): %s", ce.Explain, len(best), what, f.Explain)
	s.progress("verify: shrunk to %d requests in %d replays\n", len(best), sh.replays)
	return nil
}

// trace is the Trace of replay jr of src's trial.
func (s *study) trace(src *traceSrc, jr ran, shrunk bool) *measure.Trace {
	t := &measure.Trace{AnchorUS: src.anchor.UnixMicro(), WindowMS: src.trial.Schedule.Params.Window.Milliseconds(), Shrunk: shrunk}
	if w := src.trial.Schedule.Params.Window; w%time.Millisecond != 0 {
		t.WindowMS = 0 // not whole ms: the anchor alone places it
	}
	for _, d := range src.trial.Skew {
		t.SkewUS = append(t.SkewUS, d.Microseconds())
	}
	for _, o := range jr.outcomes {
		a := o.Arrival
		t.Requests = append(t.Requests, measure.Step{AtUS: a.At.Microseconds(), Key: a.Key, Cost: a.Cost, Client: a.Client, Allowed: o.Decision.Allowed})
	}
	return t
}

// shrinker is one shrinking under way.
type shrinker struct {
	s       *study
	src     *traceSrc
	budget  int
	spent   int
	replays int
}

// run shrinks src's requests (steps 2 to 4 above) and returns the smallest
// that still violates, its judgement and run, and whether no single
// request can be dropped from it. A nil judgement: even all the requests
// did not violate again.
func (sh *shrinker) run(ctx context.Context) (best []scenarios.Arrival, bestTR *trialResult, bestJR ran, minimal bool, err error) {
	all := sh.src.requests()
	try := func(cand []scenarios.Arrival) (bool, error) {
		tr, jr, err := sh.replay(ctx, cand)
		if err != nil || tr.failure == nil {
			return false, err
		}
		best, bestTR, bestJR = cand, tr, jr
		return true, nil
	}
	// 2. a small start that still fails
	var setOnly, recent []scenarios.Arrival
	for _, i := range sh.src.set {
		setOnly = append(setOnly, all[i])
	}
	for _, a := range all {
		if a.At >= sh.src.lo-sh.src.broke.Window {
			recent = append(recent, a)
		}
	}
	started := false
	for _, cand := range [][]scenarios.Arrival{setOnly, recent, all} {
		ok, err := try(cand)
		if err != nil {
			return sh.stop(best, bestTR, bestJR, err)
		}
		if ok {
			started = true
			break
		}
	}
	if !started {
		return nil, nil, ran{}, false, nil
	}
	// 3. the longest run of leading requests that can go: first where the
	// rest costs just over the limit, then by bisection
	lo, hi := 0, len(best) // best[lo:] fails; best[hi:] does not
	base := best
	probe := func(k int) error {
		if k <= lo || k >= hi {
			return nil
		}
		ok, err := try(base[k:])
		switch {
		case err != nil:
			return err
		case ok:
			lo = k
		default:
			hi = k
		}
		return nil
	}
	over := sh.src.broke.Count + 1
	if g := lastCosting(base, over); g > 0 {
		if err := probe(g); err != nil {
			return sh.stop(best, bestTR, bestJR, err)
		}
		if err := probe(g + 1); err != nil {
			return sh.stop(best, bestTR, bestJR, err)
		}
	}
	for hi-lo > 1 {
		if err := probe(lo + (hi-lo)/2); err != nil {
			return sh.stop(best, bestTR, bestJR, err)
		}
	}
	// 4. chunks, halving, until no single request can go; a rest that
	// costs no more than the limit cannot put more in one window, and is
	// not replayed
	for c := max(len(best)/2, 1); ; c /= 2 {
		for i := 0; i < len(best); {
			cand := slices.Concat(best[:i], best[min(i+c, len(best)):])
			ok := false
			if cost(cand) >= over {
				if ok, err = try(cand); err != nil {
					return sh.stop(best, bestTR, bestJR, err)
				}
			}
			if !ok {
				i += c
			}
		}
		if c == 1 {
			return best, bestTR, bestJR, true, nil
		}
	}
}

// cost is the total cost of arrivals.
func cost(arrivals []scenarios.Arrival) int64 {
	var sum int64
	for _, a := range arrivals {
		sum += a.Cost
	}
	return sum
}

// lastCosting is the largest k such that arrivals[k:] costs at least
// total; 0 when none but all of them do.
func lastCosting(arrivals []scenarios.Arrival, total int64) int {
	var sum int64
	for k := len(arrivals) - 1; k >= 0; k-- {
		if sum += arrivals[k].Cost; sum >= total {
			return k
		}
	}
	return 0
}

// stop ends run on err: a spent budget keeps the best so far (not
// minimal); any other error is returned.
func (sh *shrinker) stop(best []scenarios.Arrival, tr *trialResult, jr ran, err error) ([]scenarios.Arrival, *trialResult, ran, bool, error) {
	if errors.Is(err, errBudget) {
		return best, tr, jr, false, nil
	}
	return nil, nil, ran{}, false, err
}

// replay runs arrivals of the trial on fresh keys and judges them as the
// failure was judged (a violation on the limit that broke; starvation and
// interference as the trial). A replay whose calls failed is judged not to
// fail (what the failed calls would have done is unknown). errBudget when
// the budget cannot pay for it.
func (sh *shrinker) replay(ctx context.Context, arrivals []scenarios.Arrival) (*trialResult, ran, error) {
	if len(arrivals) == 0 {
		return &trialResult{mode: "virtual"}, ran{}, nil
	}
	if sh.spent+len(arrivals) > sh.budget {
		return nil, ran{}, errBudget
	}
	sh.spent += len(arrivals)
	sh.replays++
	return sh.s.replayTrace(ctx, sh.src, arrivals, fmt.Sprintf("%sreplay:%d:", sh.s.prefix, sh.replays))
}

// replayTrace runs arrivals (At from src.anchor) of src's trial in virtual
// time on fresh keys under prefix, and judges them as src's failure was
// judged; the result is as if run at src.anchor.
func (s *study) replayTrace(ctx context.Context, src *traceSrc, arrivals []scenarios.Arrival, prefix string) (*trialResult, ran, error) {
	t := src.trial
	jr, err := s.replayRun(ctx, t, arrivals, src.anchor, prefix)
	if err != nil {
		return nil, jr, err
	}
	j := &judgement{t: t, tr: &trialResult{mode: "virtual"}, exact: true, keep: true, sent: jr.sent}
	failed := slices.ContainsFunc(jr.outcomes, func(o harness.Outcome) bool { return o.Err != nil })
	own := limit.Limit{Count: t.Schedule.Params.Limit, Window: t.Schedule.Params.Window}
	var ctl ran
	switch {
	case failed: // counted, not judged
	case t.Judge == scenarios.Isolation:
		ctl, err = s.replayRun(ctx, isolationControl(scenarios.Trial{Schedule: scenarios.Schedule{Params: t.Schedule.Params, Arrivals: arrivals}}), nil, src.anchor, prefix+"control:")
		if err != nil {
			return nil, jr, err
		}
		j.checkIsolation(own, true)
		j.control.keep = true
	case src.floor > 0:
		j.checkLiveness(own, src.floor)
	default:
		j.checkSafety(src.brokeK, src.broke, src.judged)
		j.named = len(s.limits) > 1
	}
	feed(j, jr)
	if j.control != nil {
		feed(j.control, ctl)
	}
	return j.finish(), jr, nil
}

// replayRun runs arrivals of trial t (nil: t's own) in virtual time on
// fresh keys under prefix, at anchor: the runner anchors a schedule on the
// first window boundary after harness.VirtualEpoch, so the arrivals are
// sent shifted by the difference, and the result is shifted back (its
// Anchor is anchor, its arrivals' At theirs). Decisions are not logged.
func (s *study) replayRun(ctx context.Context, t scenarios.Trial, arrivals []scenarios.Arrival, anchor time.Time, prefix string) (ran, error) {
	if arrivals == nil {
		arrivals = t.Schedule.Arrivals
	}
	w := t.Schedule.Params.Window
	base := harness.AlignUp(harness.VirtualEpoch, w)
	d := anchor.Sub(base)
	shifted := make([]scenarios.Arrival, len(arrivals))
	for i, a := range arrivals {
		a.At += d
		shifted[i] = a
	}
	rt := t
	rt.Greedy, rt.Build, rt.Stream = nil, nil, nil
	rt.Schedule.Arrivals = shifted
	r := s.runner(harness.VirtualClock)
	r.Log, r.Progress, r.Parallel = nil, nil, 1
	var got harness.Collector
	job := s.job(rt, prefix)
	job.Sink = &got
	jrs, err := r.Execute(ctx, []harness.Job{job})
	if kerr := r.Settle(); kerr != nil {
		err = kerr
	}
	if err != nil {
		return ran{}, err
	}
	if len(jrs) != 1 {
		return ran{}, errors.New("replay: no result")
	}
	if len(arrivals) > 0 && !jrs[0].Anchor.Equal(base) {
		return ran{}, fmt.Errorf("replay: the trace's anchor %s is not on a boundary of its window %s after %s", anchor.Format(time.RFC3339Nano), limit.FormatWindow(w), harness.VirtualEpoch.Format(time.RFC3339))
	}
	for i := range got.Outcomes {
		got.Outcomes[i].Arrival.At -= d
	}
	return ran{anchor: anchor, outcomes: got.Outcomes, sent: arrivals}, nil
}

// unreproduced makes rep INCONCLUSIVE: its violation did not fail again
// when its requests were replayed at the same virtual instants on fresh
// keys, so it depended on more than the limiter and its input.
func unreproduced(rep *measure.VerifyReport) {
	if rep.Unreproduced {
		return // said once
	}
	rep.Verdict, rep.Unreproduced = measure.Inconclusive, true
	rep.Notes = append(rep.Notes, "the counter-example did not fail again when replayed on fresh keys in virtual time: "+
		"the violation depended on more than the limiter and its input (e.g. a machine too loaded for the call timeout); not a verdict, verify again")
}
