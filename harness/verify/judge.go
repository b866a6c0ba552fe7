package verify

import (
	"slices"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// trialResult is the judgement of one trial.
type trialResult struct {
	mode string
	// slow: a virtual trial that took half a window or more of real time;
	// its failures are not trusted (keys may have expired on the real clock)
	slow      bool
	decisions int64
	// shared: the trial was judged on another trial's run (overload's
	// safety and liveness), whose result counts its decisions and errors;
	// controlDecisions and controlErrors are its isolation control's
	// (counted in the report, not in decisions)
	shared                          bool
	controlDecisions, controlErrors int64
	// skipped: the requests of thinned bursts not sent (harness.Job.Thin)
	skipped      int64
	errors       int64
	errorSamples []string
	ratio        float64
	fidelity     float64
	failure      *measure.CounterExample
	// src is what reproduces failure (nil when there is none)
	src *traceSrc
	// byLimit is the safety judgement on each of the study's limits
	// alone, by their index; failure is the worst of them when the trial
	// violated one (the same *CounterExample).
	byLimit []limitJudged
	// starved is the trial's starvation and starvedSrc what reproduces it,
	// set whether or not a violation was found too (failure is then the
	// violation).
	starved    *measure.CounterExample
	starvedSrc *traceSrc
}

// limitJudged is one trial judged against one limit: the largest accepted
// / limit in one window, and the worst violation with what reproduces it.
type limitJudged struct {
	ratio   float64
	failure *measure.CounterExample
	src     *traceSrc
}

// traceSrc is the trial and the requests behind a failure: what shrink
// replays and Trace records.
type traceSrc struct {
	trial scenarios.Trial
	// arrivals are the trial's requests up to the one that closed the
	// failing window (all of them for starvation and interference): its
	// first n, made from trial when arrivals is nil (requests); anchor is
	// the instant their At count from.
	arrivals []scenarios.Arrival
	n        int
	anchor   time.Time
	// broke is the limit that broke, judged on window judged; set are
	// the indexes (in arrivals) of the accepted requests of the worst
	// window, lo and hi its first and last times.
	broke  limit.Limit
	brokeK int // broke's index in the study's limits
	judged time.Duration
	set    []int
	lo, hi time.Duration
	// floor is the fidelity a starved trial fell under.
	floor float64
}

// count is how many requests src holds.
func (src *traceSrc) count() int {
	if src.arrivals != nil {
		return len(src.arrivals)
	}
	return src.n
}

// requests are src's arrivals, made from its trial the first time.
func (src *traceSrc) requests() []scenarios.Arrival {
	if src.arrivals == nil && src.n > 0 {
		src.arrivals = slices.Clip(src.trial.Arrivals()[:src.n])
	}
	return src.arrivals
}

// timed is an accepted or offered decision with its time bounds relative to
// the anchor: [lo, hi] (lo == hi when the time is the limiter's own): a
// harness.Outcome cut to what the judge reads, and what Evidence is made of.
type timed struct {
	lo, hi time.Duration
	cost   int64
	key    string
	client int
	ok     bool
	seq    int // the arrival's index in its schedule
}

// ran is one run of a trial, judged whole: its anchor, its outcomes in
// the arrivals' order, and the arrivals sent (nil: not known).
type ran struct {
	anchor   time.Time
	outcomes []harness.Outcome
	sent     []scenarios.Arrival
}

// ranOf is the run whose anchor is anchor and whose outcomes are outs:
// every arrival sent had its outcome (an adaptive run).
func ranOf(anchor time.Time, outs []harness.Outcome) ran {
	sent := make([]scenarios.Arrival, len(outs))
	for i, o := range outs {
		sent[i] = o.Arrival
	}
	return ran{anchor: anchor, outcomes: outs, sent: sent}
}

// judge applies trial t's property to what the runner measured (jr: its
// outcomes and arrivals sent): no window of any of the study's limits held more than its
// limit (Safety and Liveness trials), accepted / ideal under overload
// (Liveness), and for an Isolation trial its requests on
// scenarios.IsolationKey against ctl, the same requests on a fresh key
// alone. virtual says jr ran in virtual time. A trial run with a
// judgement as its job's Sink is judged as it runs (runBatch): the same.
func (s *study) judge(t scenarios.Trial, jr ran, ctl *ran, virtual bool) *trialResult {
	j := s.judgement(t, virtual, ctl != nil)
	j.keep, j.sent = true, jr.sent
	if len(j.sent) == 0 {
		j.sent = nil
	}
	feed(j, jr)
	if ctl != nil {
		j.control.keep = true
		feed(j.control, *ctl)
	}
	return j.finish()
}

// feed tells sink jr's anchor and outcomes, as a run with it as its Sink.
func feed(sink harness.Sink, jr ran) {
	sink.Anchor(jr.anchor)
	for _, o := range jr.outcomes {
		_ = sink.Add(o) // a judgement takes every outcome
	}
}

// judgedWindow is the window a set of decisions must fit in to count, for
// a target of resolution res: never count a set that the target's clock
// could have seen spanning a whole window. exact says the decision times
// are already on the injected clock (whole µs, what the script was
// handed): the window shrinks only when the script reads a coarser step
// from it (1 ms for {now_ms}). Otherwise the times are send and receive
// bounds in ns, and the target's clock is at best µs: it shrinks by at
// least 1 µs, since two true times less than W apart may still be W
// apart once truncated to µs.
func judgedWindow(w, res time.Duration, exact bool) time.Duration {
	if !exact {
		return w - max(res, time.Microsecond)
	}
	if res > time.Microsecond {
		return w - res
	}
	return w
}

// onInjectedClock is at (from anchor) as an injected clock hands it to a
// script: truncated to the µs (Clock's ARGV is Unix µs), as an offset from
// anchor again.
func onInjectedClock(anchor time.Time, at time.Duration) time.Duration {
	return anchor.Add(at).Truncate(time.Microsecond).Sub(anchor)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// maxConservative returns the largest accepted cost of a set of decisions
// that certainly fit in one window: sorted by lo, the set starting at
// decision i holds every later decision whose hi is < lo_i + w. With exact
// times (lo == hi) this is max_in_window on (t-w, t].
func maxConservative(acc []timed, w time.Duration) (best int64, lo, hi time.Duration, set []timed) {
	bestI := -1
	if exactTimes(acc) {
		// lo == hi: streamed through the trailing window (t-w, t]
		// (each entry's seq its index in acc: the worst set is a run of acc)
		tw := newTrailingWindow(w)
		for i, x := range acc {
			tw.add(entry{at: x.lo, cost: x.cost, seq: i})
		}
		best, lo, hi, es := tw.worst()
		if es != nil {
			set = acc[es[0].seq : es[len(es)-1].seq+1]
		}
		return best, lo, hi, set
	}
	for i := range acc {
		var sum int64
		var top time.Duration
		for k := i; k < len(acc) && acc[k].lo < acc[i].lo+w; k++ {
			if acc[k].hi < acc[i].lo+w {
				sum += acc[k].cost
				top = max(top, acc[k].hi)
			}
		}
		if sum > best {
			best, lo, hi, bestI = sum, acc[i].lo, top, i
		}
	}
	if bestI >= 0 {
		for k := bestI; k < len(acc) && acc[k].lo < lo+w; k++ {
			if acc[k].hi < lo+w {
				set = append(set, acc[k])
			}
		}
	}
	return best, lo, hi, set
}

// evidence is the counter-example's view of a set: every decision, with
// the receive time when the times are bounds (real).
func evidence(set []timed, real bool) []measure.Evidence {
	out := make([]measure.Evidence, 0, len(set))
	for _, x := range set {
		e := measure.Evidence{Key: x.key, Cost: x.cost, AtUS: x.lo.Microseconds(), Client: x.client}
		if real {
			e.RecvUS = x.hi.Microseconds()
		}
		out = append(out, e)
	}
	return out
}

// exactTimes reports whether every decision of acc has an exact time.
func exactTimes(acc []timed) bool {
	for _, x := range acc {
		if x.lo != x.hi {
			return false
		}
	}
	return true
}
