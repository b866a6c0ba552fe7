package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/scenarios"
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
// covers: a round trip of n calls may take Timeout * ceil(n/16).
const pipelineTimeoutCalls = 16

// pipelined reports whether job j's virtual run goes through runPipelined.
func (r *Runner) pipelined(j Job) bool {
	_, ok := j.Limiter.(algorithms.Scripted)
	return ok && r.Redis != nil && (r.Pipeline > 0 || r.Expiry)
}

// vtJob is the state of one job's pipelined run: its scripted limiter and
// what key expiry emulation learned.
type vtJob struct {
	s      algorithms.Scripted
	anchor time.Time
	// scan: the limiter writes keys besides its call's Keys, found by a SCAN
	// after its first decision; every later decision then scans its tag.
	scan, probed bool
}

// runPipelined runs job j's schedule in virtual time, Pipeline calls per
// round trip (one for the first call when Expiry is on: it finds the keys
// the limiter writes).
func (r *Runner) runPipelined(ctx context.Context, job int, j Job, anchor time.Time, h *hdrhistogram.Histogram) []Outcome {
	arr := j.Schedule.Arrivals
	out := make([]Outcome, len(arr))
	st := &vtJob{s: j.Limiter.(algorithms.Scripted), anchor: anchor}
	depth := max(r.Pipeline, 1)
	n := 0
	for n < len(arr) && ctx.Err() == nil {
		size := depth
		if r.Expiry && !st.probed {
			size = 1
		}
		end := min(n+size, len(arr))
		for seq := n; seq < end; seq++ {
			out[seq] = Outcome{Seq: seq, Arrival: arr[seq]}
		}
		r.sendBatch(ctx, job, j, st, out[n:end], h)
		n = end
	}
	return out[:n]
}

// Adaptive runs one job in virtual time whose arrivals depend on the
// answers (a greedy adversary): next is called with the outcome of the
// previous arrival (nil for the first) and returns the next arrival (At
// relative to the anchor, never earlier than the previous one) or false to
// stop. One call per round trip; Expiry applies as in Execute. The anchor is
// chosen from j.Schedule as Execute chooses it (its Params.Window and its
// first arrival's At, if any: give the earliest At next may return). The
// result's Job.Schedule.Arrivals are the arrivals sent. Errors: a clock
// other than virtual, or the run's cause when ctx is cancelled or Redis
// kept failing (MaxOutage).
func (r *Runner) Adaptive(ctx context.Context, j Job, next func(last *Outcome) (scenarios.Arrival, bool)) (JobResult, error) {
	if r.Clock != VirtualClock && r.Clock != "" {
		return JobResult{}, fmt.Errorf("adaptive runs need the virtual clock, not %q", r.Clock)
	}
	outer := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.cancel = cancel
	jr := JobResult{Job: j, Latency: newHist(), Anchor: virtualAnchor(j.Schedule)}
	jr.Job.Schedule.Arrivals = nil
	start := time.Now()
	var st *vtJob
	if r.pipelined(j) {
		st = &vtJob{s: j.Limiter.(algorithms.Scripted), anchor: jr.Anchor}
	}
	var last *Outcome
	for ctx.Err() == nil {
		a, ok := next(last)
		if !ok {
			break
		}
		if a.Key == "" {
			a.Key = scenarios.UserKey
		}
		seq := len(jr.Outcomes)
		jr.Job.Schedule.Arrivals = append(jr.Job.Schedule.Arrivals, a)
		o := Outcome{Seq: seq, Arrival: a}
		if st != nil {
			one := []Outcome{o}
			r.sendBatch(ctx, 0, jr.Job, st, one, jr.Latency)
			o = one[0]
		} else {
			o = r.decide(ctx, 0, jr.Job, seq, jr.Anchor, algorithms.At(jr.Anchor.Add(a.At)))
			_ = jr.Latency.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
		}
		jr.Outcomes = append(jr.Outcomes, o)
		last = &jr.Outcomes[len(jr.Outcomes)-1]
	}
	jr.Duration = time.Since(start)
	var err error
	if ctx.Err() != nil {
		err = context.Cause(ctx)
		if outer.Err() != nil {
			err = context.Cause(outer)
		}
	}
	if r.Log != nil {
		if lerr := r.Log.Flush(); lerr != nil && err == nil {
			err = fmt.Errorf("decisions log: %w", lerr)
		}
	}
	return jr, err
}

// pendingCall is one call of a round trip with its commands.
type pendingCall struct {
	i         int // index in the batch
	call      algorithms.ScriptCall
	vnow      time.Time // true virtual time (keys expire on the server's clock: unskewed)
	tag       string    // the arrival's key
	cmd, post *redis.Cmd
}

// sendBatch decides the arrivals of batch (Seq and Arrival set) in one
// round trip, fills in their answers and records them (Log, Observe).
func (r *Runner) sendBatch(ctx context.Context, job int, j Job, st *vtJob, batch []Outcome, h *hdrhistogram.Histogram) {
	var ps []pendingCall
	for i := range batch {
		a := batch[i].Arrival
		vnow := st.anchor.Add(a.At)
		c, err := st.s.Call(j.Prefix+"{"+a.Key+"}", a.Cost, algorithms.At(vnow.Add(j.ClockSkew(a.Client))))
		if err != nil {
			batch[i].Err = err
			continue
		}
		ps = append(ps, pendingCall{i: i, call: c, vnow: vnow, tag: a.Key})
	}
	sent := time.Now()
	err := r.loadScripts(ctx, ps)
	for attempt := 0; err == nil && len(ps) > 0 && attempt < 3; attempt++ {
		err = r.roundTrip(ctx, j, st, ps)
		// calls refused with NOSCRIPT (the script cache was flushed) did not
		// run: load the scripts again and resend them, in order
		var again []pendingCall
		for _, p := range ps {
			if isNoScript(p.cmd.Err()) || (p.post != nil && isNoScript(p.post.Err())) {
				again = append(again, p)
			}
		}
		if len(again) == 0 {
			break
		}
		r.scriptsLoaded.Clear()
		if err = r.loadScripts(ctx, again); err == nil {
			ps = again
		}
	}
	recv := time.Now()
	per := recv.Sub(sent) / time.Duration(max(len(batch), 1))
	for _, p := range ps {
		o := &batch[p.i]
		if p.cmd == nil { // never sent: the scripts could not be loaded
			o.Err = fmt.Errorf("%s: %w", j.Limiter.Name(), err)
			continue
		}
		v, cerr := p.cmd.Result()
		switch {
		case cerr != nil && !errors.Is(cerr, redis.Nil):
			o.Err = fmt.Errorf("%s: %w", j.Limiter.Name(), cerr)
		default:
			o.Decision, o.Err = st.s.Decode(p.call, v)
			if o.Err != nil {
				o.Err = fmt.Errorf("%s: %w", j.Limiter.Name(), o.Err)
			}
		}
		if o.Err == nil && p.post != nil {
			found, perr := p.post.Int64()
			if perr != nil {
				o.Err = fmt.Errorf("key expiry emulation: %w", perr)
			} else if found > 0 {
				st.scan = true
			}
		}
	}
	st.probed = true
	if err != nil {
		for i := range batch {
			if batch[i].Err == nil && batch[i].Decision.DecidedAt.IsZero() {
				batch[i].Err = err
			}
		}
	}
	var firstErr error
	for i := range batch {
		o := &batch[i]
		o.Sent, o.Recv = sent, sent.Add(per)
		_ = h.RecordValue(max(per.Microseconds(), 1))
		if o.Err != nil && !errors.Is(o.Err, algorithms.ErrCostExceedsLimit) && firstErr == nil {
			firstErr = o.Err
		}
		r.record(job, j, st.anchor, o)
	}
	r.settle(firstErr) // one round trip: one success or failure of Redis
}

// roundTrip sends the calls ps (with the expiry emulation around each one
// when Expiry is set) in one pipeline.
func (r *Runner) roundTrip(ctx context.Context, j Job, st *vtJob, ps []pendingCall) error {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if r.Timeout > 0 {
		n := (len(ps) + pipelineTimeoutCalls - 1) / pipelineTimeoutCalls
		cctx, cancel = context.WithTimeout(ctx, r.Timeout*time.Duration(n))
	}
	defer cancel()
	pipe := r.Redis.Pipeline()
	if _, cluster := r.Redis.(*redis.ClusterClient); r.Expiry && !cluster {
		// nothing runs between a call and its expiry scripts; on a Cluster a
		// transaction cannot span the slots of a batch's keys, and the
		// pipeline's order per node (each key on one node) suffices: a
		// trial's keys see only the trial's own calls
		pipe = r.Redis.TxPipeline()
	}
	for k := range ps {
		p := &ps[k]
		if r.Expiry {
			expiryBefore(cctx, pipe, j.Prefix, p.tag, p.vnow)
		}
		p.cmd = pipe.EvalSha(cctx, p.call.Script.Hash(), p.call.Keys, p.call.Args...)
		if r.Expiry {
			p.post = expiryAfter(cctx, pipe, j.Prefix, p.tag, p.call.Keys, p.vnow, st.scan || !st.probed)
		}
	}
	_, err := pipe.Exec(cctx)
	if err != nil && r.Timeout > 0 && server.IsTimeout(err) {
		r.killBusy(ctx)
	}
	// per-command errors are read from each command; only a failed round
	// trip (network, timeout) is returned
	var re redis.Error
	if err == nil || errors.Is(err, redis.Nil) || errors.As(err, &re) {
		return nil
	}
	return err
}

// loadScripts makes sure the server holds every script of ps (and the
// expiry emulation's scripts), with SCRIPT LOAD of those not yet loaded by
// this Runner.
func (r *Runner) loadScripts(ctx context.Context, ps []pendingCall) error {
	var scripts []*redis.Script
	if r.Expiry {
		scripts = append(scripts, expiryScripts...)
	}
	for _, p := range ps {
		scripts = append(scripts, p.call.Script)
	}
	for _, s := range scripts {
		if _, ok := r.scriptsLoaded.Load(s.Hash()); ok {
			continue
		}
		if err := s.Load(ctx, r.Redis).Err(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
		r.scriptsLoaded.Store(s.Hash(), true)
	}
	return nil
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
