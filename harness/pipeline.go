package harness

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/vclock"
)

// Pipelined virtual time.
//
// In virtual time the arrivals of a schedule and the times they are decided
// at are known in advance: no call depends on an earlier reply. With
// Runner.Pipeline > 0 a job's calls (algorithms.Scripted's Call) are sent
// Pipeline at a time on one connection and decoded from the replies (Decode),
// in schedule order: each script call stays atomic, and Redis runs them in the
// order sent. Arrivals at one instant from different clients, which the
// one-call-at-a-time mode sends concurrently, are then sent in schedule
// order: one of the interleavings the concurrent mode can produce, and the
// one a verification judges the same way (the judge looks at which calls
// were accepted, not at who raced whom). A limiter that is not Scripted
// (an HTTP endpoint) is sent one call at a time as without Pipeline.

// pipelineTimeoutCalls is how many calls of a round trip one Runner.Timeout
// covers when CallsPerTimeout is zero: a round trip of n calls may take
// Timeout * ceil(n/16).
const pipelineTimeoutCalls = 16

// pipelined reports whether job j's virtual run goes through runPipelined.
func (r *Runner) pipelined(j Job) bool {
	_, ok := j.Limiter.(algorithms.Scripted)
	return ok && r.Redis != nil && (r.Pipeline > 0 || r.Expiry)
}

// vtJob is the state of one job's pipelined run: its scripted limiter, its
// pipe and its anchor.
type vtJob struct {
	s      algorithms.Scripted
	w      algorithms.CallWriter  // s, when it writes its calls over reused ones
	pipe   *algorithms.ScriptPipe // the job's own: not safe for concurrent use
	anchor time.Time
	// sendBatch's, reused from one batch to the next: the limiter's calls
	// and, with Expiry, the rewritten calls sent (each keeps its slices)
	ps    []pendingCall
	calls []algorithms.ScriptCall
	keys  [vtKeySlots]vtKey
}

// vtKey is an arrival key's keys in a job's run: the limiter's key (the
// job's prefix + "{" + key + "}") and, with Expiry, its tag's tracked
// prefix and companion hash.
type vtKey struct {
	key    string // the arrival's key; "" in an empty slot
	tagged string
	tag    algorithms.ExpiryTag
}

// vtKeySlots is how many arrival keys a job keeps the keys of (a cache
// indexed by the key's hash: a key seen again is not built again).
const vtKeySlots = 64

var vtKeySeed = maphash.MakeSeed()

// runKey returns the keys of arrival key in job j's run, built once while
// key keeps its slot.
func (st *vtJob) runKey(j Job, key string, expiry bool) *vtKey {
	e := &st.keys[maphash.String(vtKeySeed, key)%vtKeySlots]
	if e.tagged == "" || e.key != key {
		tagged := j.Prefix + "{" + key + "}"
		*e = vtKey{key: key, tagged: tagged}
		if expiry {
			e.tag = algorithms.NewExpiryTag(tagged, vclock.CompanionKey(j.Prefix, key))
		}
	}
	return e
}

// newVTJob returns the pipelined state of job j. Each call is one script
// (with Expiry, the limiter's rewritten to emulate key expiry in the same
// call: expiry.go), so no transaction is needed: every call is atomic and
// Redis runs a connection's calls in the order sent.
func (r *Runner) newVTJob(j Job, anchor time.Time) *vtJob {
	r.expiryOnce.Do(func() { r.expiryStart = time.Now() })
	st := &vtJob{s: j.Limiter.(algorithms.Scripted), pipe: algorithms.NewScriptPipe(r.Redis), anchor: anchor}
	st.w, _ = st.s.(algorithms.CallWriter)
	return st
}

// runThinned runs job j in virtual time, Pipeline calls per round trip,
// its bursts thinned (thin.go), reading its arrivals from read as the
// thinner needs them and telling tl the outcomes of each round trip in
// order as it ends; it returns how many arrivals were left out (they have
// no outcome; the outcomes' Seq count every arrival).
func (r *Runner) runThinned(ctx context.Context, j Job, read func() (scenarios.Arrival, bool), tl *teller, anchor time.Time, h *hdrhistogram.Histogram) (skipped int64) {
	st := r.newVTJob(j, anchor)
	th := r.newThinner(j, read)
	depth := max(r.Pipeline, 1)
	batch := make([]Outcome, 0, depth)
	for ctx.Err() == nil {
		seqs := th.pick(depth)
		if len(seqs) == 0 {
			break
		}
		batch = batch[:0]
		for _, seq := range seqs {
			batch = append(batch, Outcome{Seq: seq, Arrival: th.at(seq)})
		}
		r.sendBatch(ctx, j, st, batch, h)
		th.saw(seqs, batch)
		for _, o := range batch {
			tl.add(o)
		}
	}
	return th.skipped
}

// runStreamed runs job j in virtual time, ranging over its arrivals once,
// in order, Pipeline per round trip, and telling tl the outcomes of each
// round trip in order as it ends: it holds one round trip's arrivals and
// outcomes. The anchor is anchorOf(the first arrival; the zero Arrival
// when there is none), told to tl before any outcome and returned.
func (r *Runner) runStreamed(ctx context.Context, j Job, tl *teller, anchorOf func(scenarios.Arrival) time.Time, h *hdrhistogram.Histogram) time.Time {
	var st *vtJob
	var anchor time.Time
	start := func(a scenarios.Arrival) {
		anchor = anchorOf(a)
		tl.anchor(anchor)
		st = r.newVTJob(j, anchor)
	}
	depth := max(r.Pipeline, 1)
	batch := make([]Outcome, 0, depth)
	send := func() {
		r.sendBatch(ctx, j, st, batch, h)
		for _, o := range batch {
			tl.add(o)
		}
		batch = batch[:0]
	}
	seq := 0
	if j.Arrivals != nil {
		for a := range j.Arrivals {
			if st == nil {
				start(a)
			}
			if ctx.Err() != nil {
				break
			}
			batch = append(batch, Outcome{Seq: seq, Arrival: a})
			seq++
			if len(batch) == depth {
				send()
			}
		}
	}
	if st == nil {
		start(scenarios.Arrival{})
	}
	if ctx.Err() == nil && len(batch) > 0 {
		send()
	}
	return anchor
}

// Adaptive runs one job in virtual time whose arrivals depend on the
// answers (a greedy adversary): next is called with the outcome of the
// previous arrival (nil for the first) and returns the next arrival (At
// relative to the anchor, never earlier than the previous one) or false to
// stop; j.Sink is told each outcome as it is decided (Seq counts the
// arrivals from 0). One call per round trip; Expiry applies as in
// Execute. The anchor is chosen as Execute chooses it, from j.Limit.Window
// and j's first arrival, read for that alone (give the earliest At next
// may return; no arrival: 0). Errors: a clock other than virtual or a j
// without Limit.Window (before any call), or the run's cause when ctx is
// cancelled, the Sink failed or Redis kept failing (MaxOutage).
func (r *Runner) Adaptive(ctx context.Context, j Job, next func(last *Outcome) (scenarios.Arrival, bool)) (JobResult, error) {
	if r.Clock != VirtualClock && r.Clock != "" {
		return JobResult{}, fmt.Errorf("adaptive runs need the virtual clock, not %q", r.Clock)
	}
	if err := j.check(); err != nil {
		return JobResult{}, err
	}
	outer := ctx
	ctx, cancel := r.begin(ctx)
	defer cancel(nil)
	a0, _ := first(j.Arrivals)
	jr := JobResult{Job: j, Latency: NewHist(), Anchor: virtualAnchor(a0.At, j.Limit.Window)}
	tl := &teller{sink: j.Sink, stop: r.stop}
	tl.anchor(jr.Anchor)
	start := time.Now()
	var st *vtJob
	if r.pipelined(j) {
		st = r.newVTJob(j, jr.Anchor)
	}
	var last *Outcome
	for seq := 0; ctx.Err() == nil; seq++ {
		a, ok := next(last)
		if !ok {
			break
		}
		if a.Key == "" {
			a.Key = scenarios.UserKey
		}
		o := Outcome{Seq: seq, Arrival: a}
		if st != nil {
			one := []Outcome{o}
			r.sendBatch(ctx, j, st, one, jr.Latency)
			o = one[0]
		} else {
			o = r.decide(ctx, j, seq, a, jr.Anchor, algorithms.At(jr.Anchor.Add(a.At)))
			_ = jr.Latency.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
		}
		tl.add(o)
		last = &o
	}
	tl.end()
	jr.Duration = time.Since(start)
	return jr, r.finish(ctx, outer)
}

// pendingCall is one call of a round trip: where it stands in the batch
// and in the round trip's script calls.
type pendingCall struct {
	i    int                   // index in the batch
	call algorithms.ScriptCall // the limiter's call (Decode reads it)
	at   int                   // index of the call sent in the round trip's calls
	vnow time.Time             // the server's virtual time (unskewed)
}

// sendBatch decides the arrivals of batch (Seq and Arrival set) in one
// round trip, fills in their answers and records them (Log). The
// round trip is the job's ScriptPipe: calls refused with NOSCRIPT (the
// script cache was flushed) did not run; they are loaded and resent in
// order.
func (r *Runner) sendBatch(ctx context.Context, j Job, st *vtJob, batch []Outcome, h *hdrhistogram.Histogram) {
	for len(st.ps) < len(batch) {
		st.ps = append(st.ps, pendingCall{})
		st.calls = append(st.calls, algorithms.ScriptCall{})
	}
	var safety time.Duration
	if r.Expiry {
		safety = r.safetyTTL(j) // one for the round trip: its calls are sent together
	}
	n := 0 // calls made
	for i := range batch {
		a := batch[i].Arrival
		vnow := st.anchor.Add(a.At)
		k := st.runKey(j, a.Key, r.Expiry)
		p := &st.ps[n]
		at := algorithms.At(vnow.Add(j.ClockSkew(a.Client)))
		var err error
		if st.w != nil {
			err = st.w.WriteCall(&p.call, k.tagged, a.Cost, at)
		} else {
			p.call, err = st.s.Call(k.tagged, a.Cost, at)
		}
		if err != nil {
			batch[i].Err = err
			continue
		}
		// vnow unskewed: keys expire on the server's true virtual clock
		p.i, p.at, p.vnow = i, n, vnow
		if r.Expiry {
			if err := expiryCall(&st.calls[n], p.call, k.tag, vnow, safety); err != nil {
				batch[i].Err = err
				continue
			}
		} else {
			st.calls[n] = p.call
		}
		n++
	}
	ps, calls := st.ps[:n], st.calls[:n]
	sent := time.Now()
	var cmds []*redis.Cmd
	err := r.guard().Load(ctx, r.Redis, calls)
	if err == nil && len(calls) > 0 {
		cmds, err = r.roundTrip(ctx, st, len(ps), calls)
	}
	recv := time.Now()
	per := recv.Sub(sent) / time.Duration(max(len(batch), 1))
	for _, p := range ps {
		o := &batch[p.i]
		if cmds == nil { // never sent: the scripts could not be loaded
			o.Err = fmt.Errorf("%s: %w", j.Limiter.Name(), err)
			continue
		}
		v, cerr := cmds[p.at].Result()
		switch {
		case cerr != nil && !errors.Is(cerr, redis.Nil):
			o.Err = fmt.Errorf("%s: %w", j.Limiter.Name(), cerr)
		default:
			o.Decision, o.Err = st.s.Decode(p.call, v)
			if o.Err != nil {
				o.Err = fmt.Errorf("%s: %w", j.Limiter.Name(), o.Err)
			}
		}
		if o.Err == nil && r.Expiry && o.Decision.DecidedAt.IsZero() {
			// a script that reads no clock decides at the server's
			// virtual time: it meets that clock through key expiry
			o.Decision.DecidedAt = p.vnow.Truncate(time.Microsecond)
		}
	}
	if err != nil {
		for i := range batch {
			if batch[i].Err == nil && batch[i].Decision.DecidedAt.IsZero() {
				batch[i].Err = err
			}
		}
	}
	var firstErr error
	_ = h.RecordValues(max(per.Microseconds(), 1), int64(len(batch)))
	for i := range batch {
		o := &batch[i]
		o.Sent, o.Recv = sent, sent.Add(per)
		if o.Err != nil && !errors.Is(o.Err, algorithms.ErrCostExceedsLimit) && firstErr == nil {
			firstErr = o.Err
		}
		r.record(j, st.anchor, o)
	}
	r.settle(firstErr) // one round trip: one success or failure of Redis
}

// roundTrip sends calls (those of n arrivals) through the job's pipe, as
// one round trip of the call guard (Timeout per CallsPerTimeout
// arrivals), and stops a script still busy when that time ran out. Per-call
// errors are read from each command; the error is a failed round trip
// (network, timeout) or scripts that could not be loaded again.
func (r *Runner) roundTrip(ctx context.Context, st *vtJob, n int, calls []algorithms.ScriptCall) ([]*redis.Cmd, error) {
	trip := r.guard().Begin(ctx, n)
	cmds, err := trip.Exec(st.pipe, calls)
	r.ended(ctx, &trip, st.s, trip.End(err))
	return cmds, err
}
