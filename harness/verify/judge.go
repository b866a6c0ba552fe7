package verify

import (
	"fmt"
	"sort"
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
	slow         bool
	decisions    int64
	errors       int64
	errorSamples []string
	ratio        float64
	fidelity     float64
	failure      *measure.CounterExample
	// src is what reproduces failure (nil when there is none)
	src *traceSrc
}

// traceSrc is the trial and the requests behind a failure: what shrink
// replays and Trace records.
type traceSrc struct {
	trial scenarios.Trial
	// arrivals are the trial's requests up to the one that closed the
	// failing window (all of them for starvation and interference);
	// anchor is the instant their At count from.
	arrivals []scenarios.Arrival
	anchor   time.Time
	// broke is the limit that broke, judged on window judged; set are
	// the indexes (in arrivals) of the accepted requests of the worst
	// window, lo and hi its first and last times.
	broke  limit.Limit
	judged time.Duration
	set    []int
	lo, hi time.Duration
	// floor is the fidelity a starved trial fell under.
	floor float64
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

// judge applies trial t's property to what the runner measured (jr): no
// window of any of the study's limits held more than its limit (Safety and
// Liveness trials), accepted / ideal under overload (Liveness), and for an
// Isolation trial its requests on scenarios.IsolationKey against ctl, the
// same requests on a fresh key alone. virtual says jr ran in virtual time.
func (s *study) judge(t scenarios.Trial, jr harness.JobResult, ctl *harness.JobResult, virtual bool) *trialResult {
	exact := s.caps.InjectsTime
	tr := &trialResult{mode: "virtual"}
	if !virtual || !exact {
		tr.mode = "real"
	}
	if tr.mode == "virtual" && !s.emulated() {
		tr.slow = tookHalfAWindow(jr, s.limit.Window)
	}
	all := tr.collect(t, jr, exact)
	onClock := tr.mode == "virtual" || (exact && len(t.Skew) == 0)
	if t.Judge == scenarios.Safety || t.Judge == scenarios.Liveness {
		for _, l := range s.limits {
			tr.judgeSafety(t, jr, all, l, judgedWindow(l.Window, s.caps.Resolution, onClock), len(s.limits) > 1)
		}
	}
	own := limit.Limit{Count: t.Schedule.Params.Limit, Window: t.Schedule.Params.Window}
	switch t.Judge {
	case scenarios.Liveness:
		tr.judgeLiveness(t, all, own, s.cfg.livenessFloor())
	case scenarios.Isolation:
		var control []timed
		if ctl != nil {
			control = (&trialResult{mode: tr.mode}).collect(t, *ctl, exact)
		}
		tr.judgeIsolation(t, all, control, own, ctl != nil)
	}
	if tr.slow {
		tr.failure, tr.src = nil, nil
	}
	if tr.src != nil {
		tr.src.trial, tr.src.anchor = t, jr.Anchor
		if len(tr.src.arrivals) == 0 {
			tr.src.arrivals = jr.Job.Schedule.Arrivals // starved, interfered: the whole trial
		}
	}
	return tr
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

// tookHalfAWindow reports whether the calls of jr spanned half a window or
// more of real time.
func tookHalfAWindow(jr harness.JobResult, w time.Duration) bool {
	if len(jr.Outcomes) == 0 {
		return false
	}
	first, last := jr.Outcomes[0].Sent, jr.Outcomes[0].Recv
	for _, o := range jr.Outcomes {
		first, last = minTime(first, o.Sent), maxTime(last, o.Recv)
	}
	return last.Sub(first) >= w/2
}

// collect counts jr's decisions and errors and returns the answered ones
// with their time bounds, sorted by lo: the true time in virtual mode, the
// limiter's own in real time when it takes an injected clock and no skew is
// simulated, else [send, receive].
func (tr *trialResult) collect(t scenarios.Trial, jr harness.JobResult, exact bool) []timed {
	var all []timed
	for _, o := range jr.Outcomes {
		tr.decisions++
		if o.Err != nil {
			tr.errors++
			if len(tr.errorSamples) < 2 {
				tr.errorSamples = append(tr.errorSamples, o.Err.Error())
			}
			continue
		}
		var x timed
		switch {
		case tr.mode == "virtual":
			// the true time at the resolution of the clock handed to the
			// limiter (whole µs: Clock.arg); equals the limiter's own
			// time when no skew is simulated. The schedule's nanoseconds
			// would let a set span W to the limiter and W-1ns here.
			x.lo = onInjectedClock(jr.Anchor, o.Arrival.At)
			x.hi = x.lo
		case exact && len(t.Skew) == 0:
			x.lo = o.Decision.DecidedAt.Sub(jr.Anchor)
			x.hi = x.lo
		default:
			x.lo, x.hi = o.Sent.Sub(jr.Anchor), o.Recv.Sub(jr.Anchor)
		}
		x.cost, x.key, x.client, x.ok, x.seq = o.Arrival.Cost, o.Arrival.Key, o.Arrival.Client, o.Decision.Allowed, o.Seq
		all = append(all, x)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].lo < all[b].lo })
	return all
}

// judgeSafety finds, per key, the most accepted cost that certainly fits in
// one window w, records the largest ratio to the limit, and keeps the worst
// set over the limit (the highest ratio; on a tie the first found, keys in
// order) as the trial's violation, with the requests up to the one that
// closed it. jr is the trial's run.
func (tr *trialResult) judgeSafety(t scenarios.Trial, jr harness.JobResult, all []timed, l limit.Limit, w time.Duration, named bool) {
	byKey := map[string][]timed{}
	var keys []string
	for _, x := range all {
		if x.ok {
			if byKey[x.key] == nil {
				keys = append(keys, x.key)
			}
			byKey[x.key] = append(byKey[x.key], x)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		sum, lo, hi, set := maxConservative(byKey[k], w)
		ratio := float64(sum) / float64(l.Count)
		tr.ratio = max(tr.ratio, ratio)
		if sum <= l.Count || tr.failure != nil && ratio <= tr.failure.Ratio() {
			continue
		}
		tr.failure = &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Violated,
			Accepted: sum, Limit: l.Count, StartUS: lo.Microseconds(), EndUS: hi.Microseconds(),
			Decisions: evidence(set, tr.mode == "real"),
			Explain: fmt.Sprintf("%d accepted within %s (less than the window %s): %.2fx the limit of %d",
				sum, (hi - lo).String(), limit.FormatWindow(l.Window), ratio, l.Count)}
		if named {
			tr.failure.WindowMS = l.Window.Milliseconds()
			tr.failure.Explain += fmt.Sprintf(" (the limit %s broke)", l)
		}
		closing := 0
		tr.src = &traceSrc{broke: l, judged: w, lo: lo, hi: hi}
		for _, x := range set {
			closing = max(closing, x.seq)
			tr.src.set = append(tr.src.set, x.seq)
		}
		if arr := jr.Job.Schedule.Arrivals; closing < len(arr) {
			tr.src.arrivals = arr[:closing+1]
		}
	}
}

// judgeLiveness compares what was accepted with what an exact sliding-window
// log accepts on the same offers (fidelity); under floor is starvation.
func (tr *trialResult) judgeLiveness(t scenarios.Trial, all []timed, l limit.Limit, floor float64) {
	var offered []measure.Event
	var accepted int64
	for _, x := range all {
		offered = append(offered, measure.Event{At: x.lo, Cost: x.cost})
		if x.ok {
			accepted += x.cost
		}
	}
	ideal := measure.Ideal(offered, l.Count, l.Window)
	tr.fidelity = 1
	if ideal > 0 {
		tr.fidelity = float64(accepted) / float64(ideal)
	}
	if tr.fidelity < floor && tr.failure == nil {
		tr.src = &traceSrc{broke: l, floor: floor}
		tr.failure = &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Starved,
			Accepted: accepted, Limit: l.Count, Ideal: ideal, Fidelity: tr.fidelity, MinFidelity: floor,
			Explain: fmt.Sprintf("accepted %d where an exact sliding-window log accepts %d (%.2f, under %.2f): legitimate traffic is starved",
				accepted, ideal, tr.fidelity, floor)}
	}
}

// judgeIsolation: the requests on scenarios.IsolationKey, after or beside
// traffic on another key, must be answered as the same limiter answers them
// on a fresh key alone (control): a request the control accepted and the
// trial denied is interference. Without a control (real time: no exact
// replay) every one of them must be accepted, as each fits its own limit.
func (tr *trialResult) judgeIsolation(t scenarios.Trial, all, control []timed, l limit.Limit, controlled bool) {
	var ctl []bool
	for _, x := range control {
		ctl = append(ctl, x.ok)
	}
	var denied []timed
	var offered int64
	n := 0
	for _, x := range all {
		if x.key != scenarios.IsolationKey {
			continue
		}
		offered += x.cost
		want := !controlled || (n < len(ctl) && ctl[n])
		n++
		if want && !x.ok {
			denied = append(denied, x)
		}
	}
	if len(denied) > 0 {
		what := "requests on a fresh key were denied after traffic on another key"
		if controlled {
			what = "requests on a key were denied after traffic on another key, where the same limiter accepts them on a fresh key alone"
		}
		tr.src = &traceSrc{broke: l}
		tr.failure = &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Interfered,
			Limit: l.Count, Decisions: evidence(denied, tr.mode == "real"),
			Explain: fmt.Sprintf("%d of %d %s", len(denied), offered, what)}
	}
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
		tw := newTrailingWindow(w)
		for _, x := range acc {
			tw.add(x)
		}
		return tw.worst()
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
