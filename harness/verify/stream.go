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

// Judging a trial as it runs.
//
// A judgement is the Sink of its trial's job (harness.Sink): it is
// told each outcome in schedule order as soon as it is decided, and keeps
// only what its verdict and counter-example need, so a verification's
// memory is bounded by the window, not by the limit times the trials
// (16 M decisions at L = 10^5). In virtual time the schedule's order is
// the order of the decision times (the arrivals are sorted by At), and
// each decision is judged at once: per limit and key the trailing window
// (trailingWindow: the window's decisions and the worst one's), the ideal
// log of a liveness trial (measure.IdealLog: its window's accepted
// events), the requests on scenarios.IsolationKey of an isolation trial
// (and the answers of its control), counts and the first errors. In real
// time the decision times are the limiter's own or the call's send and
// receive, in no set order: the answered decisions are kept and judged
// once the job is over, sorted, as a batch.

// judgement judges one trial's outcomes (harness.Sink); finish
// returns its trialResult. Its methods are called from one goroutine at
// a time.
type judgement struct {
	t  scenarios.Trial
	tr *trialResult
	// exact: the target takes an injected clock (its decision times are
	// its own)
	exact  bool
	anchor time.Time
	// safety are the limits checked, named: more than one limit is
	// verified (a failure names the one that broke).
	safety []*safetyCheck
	named  bool
	// lives are the liveness check's keys (cause: classifying a
	// starvation) and costs the cost units offered, accepted and accepted
	// by the ideal log, by cost.
	lives map[string]*keyLife
	costs map[int64]*[3]int64
	// live is the ideal log of a liveness check (floor > 0) against
	// liveLimit while the job runs, ideal what it accepted (settle);
	// accepted is the cost the target accepted.
	live      *measure.IdealLog
	liveLimit limit.Limit
	floor     float64
	accepted  int64
	ideal     int64
	// isolation: an isolation check against isoLimit; iso are the
	// decisions on scenarios.IsolationKey; control, when set, judges the
	// control's run (its answers: oks), controlled.
	isolation bool
	isoLimit  limit.Limit
	iso       []timed
	control   *judgement
	oks       []bool
	// keep: the answered decisions are kept (all) and judged at the end,
	// sorted by time: those of a real-time trial, or of a run judged
	// whole (judge); sent are that run's arrivals, when known.
	keep bool
	all  []timed
	sent []scenarios.Arrival
	// slowWindow, when set, is the window whose half of real time makes
	// the trial too slow to judge; first and last bracket the calls.
	slowWindow  time.Duration
	first, last time.Time
	seen        bool
}

// safetyCheck is one limit checked on judged window w: per key, the
// trailing window of its accepted decisions while the job runs (virtual
// time), then its worst window (settle).
type safetyCheck struct {
	k     int // l's index in the study's limits
	l     limit.Limit
	w     time.Duration
	keys  map[string]*trailingWindow
	worst map[string]worstWindow
}

// worstWindow is one key's worst window: its accepted cost, first and
// last times, and decisions (kept for a violation only).
type worstWindow struct {
	sum    int64
	lo, hi time.Duration
	set    []timed
}

// judgement returns the judgement of trial t as judge makes it: safety on
// every limit of the study (Safety and Liveness trials), liveness against
// the trial's own limit, isolation with a control when controlled.
// virtual says the trial runs in virtual time.
func (s *study) judgement(t scenarios.Trial, virtual, controlled bool) *judgement {
	j := &judgement{t: t, tr: &trialResult{mode: "virtual"}, exact: s.caps.InjectsTime}
	if !virtual || !j.exact {
		j.tr.mode = "real"
	}
	j.keep = j.tr.mode == "real"
	if j.tr.mode == "virtual" && !s.emulated() {
		j.slowWindow = s.limit.Window
	}
	onClock := j.tr.mode == "virtual" || (j.exact && len(t.Skew) == 0)
	if t.Judge == scenarios.Safety || t.Judge == scenarios.Liveness {
		for k, l := range s.limits {
			j.checkSafety(k, l, judgedWindow(l.Window, s.caps.Resolution, onClock))
		}
		j.named = len(s.limits) > 1
	}
	own := limit.Limit{Count: t.Schedule.Params.Limit, Window: t.Schedule.Params.Window}
	switch t.Judge {
	case scenarios.Liveness:
		j.checkLiveness(own, s.cfg.livenessFloor())
	case scenarios.Isolation:
		j.checkIsolation(own, controlled)
	}
	return j
}

// checkSafety adds limit l, the study's k-th, judged on window w.
func (j *judgement) checkSafety(k int, l limit.Limit, w time.Duration) {
	j.safety = append(j.safety, &safetyCheck{k: k, l: l, w: w, keys: map[string]*trailingWindow{}})
	if len(j.tr.byLimit) <= k {
		j.tr.byLimit = append(j.tr.byLimit, make([]limitJudged, k+1-len(j.tr.byLimit))...)
	}
}

// checkLiveness adds the liveness check against limit l under floor.
func (j *judgement) checkLiveness(l limit.Limit, floor float64) {
	j.live, j.liveLimit, j.floor = measure.NewIdealLog(l.Count, l.Window), l, floor
	j.lives, j.costs = map[string]*keyLife{}, map[int64]*[3]int64{}
}

// checkIsolation adds the isolation check against limit l, with a
// control (j.control, the control job's Sink) when controlled.
func (j *judgement) checkIsolation(l limit.Limit, controlled bool) {
	j.isolation, j.isoLimit = true, l
	if controlled {
		j.control = &judgement{t: j.t, tr: &trialResult{mode: j.tr.mode}, exact: j.exact, keep: j.keep, oks: []bool{}}
	}
}

// Anchor is harness.Sink's.
func (j *judgement) Anchor(t time.Time) { j.anchor = t }

// End is harness.Sink's: the trial's run is over; what it judged
// as it ran is settled, and the windows it kept are dropped.
func (j *judgement) End() {
	if !j.keep {
		j.settle()
	}
}

// settle keeps each key's worst window and the ideal log's total, and
// drops the windows: nothing more is added.
func (j *judgement) settle() {
	for _, c := range j.safety {
		if c.worst != nil {
			continue
		}
		c.worst = make(map[string]worstWindow, len(c.keys))
		for k, tw := range c.keys {
			sum, lo, hi, es := tw.worst()
			var set []timed // no violation: nothing to show
			if sum > c.l.Count {
				set = timedOf(es, k)
			}
			c.worst[k] = worstWindow{sum: sum, lo: lo, hi: hi, set: set}
		}
		c.keys = nil
	}
	if j.live != nil {
		j.ideal, j.live = j.live.Accepted(), nil
	}
}

// Add counts o and judges it (or keeps it for finish); it never fails.
func (j *judgement) Add(o harness.Outcome) error {
	tr := j.tr
	if !j.seen {
		j.first, j.last, j.seen = o.Sent, o.Recv, true
	}
	j.first, j.last = minTime(j.first, o.Sent), maxTime(j.last, o.Recv)
	tr.decisions++
	if o.Err != nil {
		tr.errors++
		if len(tr.errorSamples) < 2 {
			tr.errorSamples = append(tr.errorSamples, o.Err.Error())
		}
		return nil
	}
	var x timed
	switch {
	case tr.mode == "virtual":
		// the true time at the resolution of the clock handed to the
		// limiter (whole µs: Clock.arg); equals the limiter's own time
		// when no skew is simulated. The schedule's nanoseconds would
		// let a set span W to the limiter and W-1ns here.
		x.lo = onInjectedClock(j.anchor, o.Arrival.At)
		x.hi = x.lo
	case j.exact && len(j.t.Skew) == 0:
		x.lo = o.Decision.DecidedAt.Sub(j.anchor)
		x.hi = x.lo
	default:
		x.lo, x.hi = o.Sent.Sub(j.anchor), o.Recv.Sub(j.anchor)
	}
	x.cost, x.key, x.client, x.ok, x.seq = o.Arrival.Cost, o.Arrival.Key, o.Arrival.Client, o.Decision.Allowed, o.Seq
	if j.keep {
		j.all = append(j.all, x)
		return nil
	}
	for _, c := range j.safety {
		if !x.ok {
			break
		}
		tw := c.keys[x.key]
		if tw == nil {
			tw = newTrailingWindow(c.w)
			c.keys[x.key] = tw
		}
		tw.add(entry{at: x.lo, cost: x.cost, seq: x.seq, client: x.client})
	}
	j.offer(x)
	return nil
}

// offer judges x for liveness and isolation, and keeps its answer for a
// control: x no earlier than the decision before it.
func (j *judgement) offer(x timed) {
	if j.live != nil {
		ideal := j.live.Offer(measure.Event{At: x.lo, Cost: x.cost})
		if x.ok {
			j.accepted += x.cost
		}
		j.observe(x, ideal) // cause.go
	}
	if j.isolation && x.key == scenarios.IsolationKey {
		j.iso = append(j.iso, x)
	}
	if j.oks != nil {
		j.oks = append(j.oks, x.ok)
	}
}

// finish judges what was added and returns the trial's judgement.
func (j *judgement) finish() *trialResult {
	tr := j.tr
	if j.slowWindow > 0 && j.seen {
		tr.slow = j.last.Sub(j.first) >= j.slowWindow/2
	}
	if j.keep {
		sort.SliceStable(j.all, func(a, b int) bool { return j.all[a].lo < j.all[b].lo })
		byKey := map[string][]timed{}
		for _, x := range j.all {
			if x.ok {
				byKey[x.key] = append(byKey[x.key], x)
			}
			j.offer(x)
		}
		for _, c := range j.safety {
			c.worst = map[string]worstWindow{}
			for k, acc := range byKey {
				sum, lo, hi, set := maxConservative(acc, c.w)
				c.worst[k] = worstWindow{sum: sum, lo: lo, hi: hi, set: set}
			}
		}
	}
	j.settle()
	for _, c := range j.safety {
		keys := make([]string, 0, len(c.worst))
		for k := range c.worst {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w := c.worst[k]
			j.violation(c, w.sum, w.lo, w.hi, w.set)
		}
	}
	if j.floor > 0 {
		j.starvation()
	}
	if j.isolation {
		var ctl []bool
		if j.control != nil {
			j.control.finish()
			ctl = j.control.oks
			tr.controlDecisions, tr.controlErrors = j.control.tr.decisions, j.control.tr.errors
		}
		tr.judgeIsolation(j.t, j.iso, ctl, j.isoLimit, j.control != nil)
	}
	if tr.slow {
		tr.failure, tr.src, tr.starved, tr.starvedSrc = nil, nil, nil, nil
		for k := range tr.byLimit {
			tr.byLimit[k].failure, tr.byLimit[k].src = nil, nil
		}
	}
	j.complete(tr.src)
	j.complete(tr.starvedSrc)
	for _, lj := range tr.byLimit {
		j.complete(lj.src)
	}
	return tr
}

// complete gives src (nil: none) its trial, anchor and requests: a
// violation's end with the one that closed it; starvation's and
// interference's are the whole trial (a run told its every outcome: as
// many as it made).
func (j *judgement) complete(src *traceSrc) {
	if src == nil {
		return
	}
	src.trial, src.anchor = j.t, j.anchor
	whole := int(j.tr.decisions)
	if j.sent != nil {
		whole = len(j.sent)
	}
	if src.n == 0 || src.n > whole {
		src.n = whole
	}
	if j.sent != nil {
		src.arrivals = j.sent[:src.n]
	}
}

// violation records the worst set of one key on check c (sum accepted
// from lo to hi) when it is over the limit and worse than the failure so
// far (on a tie the first found stays, keys in order), with the requests
// up to the one that closed it.
func (j *judgement) violation(c *safetyCheck, sum int64, lo, hi time.Duration, set []timed) {
	tr, l := j.tr, c.l
	ratio := float64(sum) / float64(l.Count)
	tr.ratio = max(tr.ratio, ratio)
	lj := &tr.byLimit[c.k]
	lj.ratio = max(lj.ratio, ratio)
	if sum <= l.Count || lj.failure != nil && ratio <= lj.failure.Ratio() {
		return
	}
	t := j.t
	ce := &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Violated,
		Accepted: sum, Limit: l.Count, StartUS: lo.Microseconds(), EndUS: hi.Microseconds(),
		Decisions: evidence(set, tr.mode == "real"),
		Explain: fmt.Sprintf("%d accepted within %s (less than the window %s): %.2fx the limit of %d",
			sum, (hi - lo).String(), limit.FormatWindow(l.Window), ratio, l.Count)}
	if j.named {
		ce.WindowMS = l.Window.Milliseconds()
		ce.Explain += fmt.Sprintf(" (the limit %s broke)", l)
	}
	closing := 0
	src := &traceSrc{broke: l, brokeK: c.k, judged: c.w, lo: lo, hi: hi}
	for _, x := range set {
		closing = max(closing, x.seq)
		src.set = append(src.set, x.seq)
	}
	src.n = closing + 1
	lj.failure, lj.src = ce, src
	if tr.failure == nil || ratio > tr.failure.Ratio() {
		tr.failure, tr.src = ce, src
	}
}

// starvation compares what was accepted with what an exact sliding-window
// log accepts on the same offers (fidelity); under floor is starvation.
func (j *judgement) starvation() {
	tr, t, l := j.tr, j.t, j.liveLimit
	ideal := j.ideal
	tr.fidelity = 1
	if ideal > 0 {
		tr.fidelity = float64(j.accepted) / float64(ideal)
	}
	if tr.fidelity >= j.floor {
		return
	}
	cause, detail := j.cause()
	tr.starvedSrc = &traceSrc{broke: l, floor: j.floor}
	tr.starved = &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Starved,
		Accepted: j.accepted, Limit: l.Count, Ideal: ideal, Fidelity: tr.fidelity, MinFidelity: j.floor,
		Cause: cause, CauseDetail: detail,
		Explain: fmt.Sprintf("accepted %d where an exact sliding-window log accepts %d (%.2f, under %.2f): legitimate traffic is starved: %s",
			j.accepted, ideal, tr.fidelity, j.floor, detail)}
	if tr.failure == nil {
		tr.failure, tr.src = tr.starved, tr.starvedSrc
	}
}

// judgeIsolation: the requests on scenarios.IsolationKey (iso), after or
// beside traffic on another key, must be answered as the same limiter
// answers them on a fresh key alone (ctl, the control's answers in
// order): a request the control accepted and the trial denied is
// interference. Without a control (real time: no exact replay) every one
// of them must be accepted, as each fits its own limit.
func (tr *trialResult) judgeIsolation(t scenarios.Trial, iso []timed, ctl []bool, l limit.Limit, controlled bool) {
	var denied []timed
	var offered int64
	for n, x := range iso {
		offered += x.cost
		want := !controlled || (n < len(ctl) && ctl[n])
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

// fanOut tells several judgements one job's outcomes: trials that send
// the same arrivals the same way, run once (runBatch).
type fanOut []*judgement

// Anchor is harness.Sink's.
func (f fanOut) Anchor(t time.Time) {
	for _, j := range f {
		j.Anchor(t)
	}
}

// Add is harness.Sink's: each judgement's (which never fails).
func (f fanOut) Add(o harness.Outcome) error {
	for _, j := range f {
		_ = j.Add(o)
	}
	return nil
}

// End is harness.Sink's.
func (f fanOut) End() {
	for _, j := range f {
		j.End()
	}
}
