package replay

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/callguard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// Memory readings during a replay: after firstMemorySample decisions, then
// at each doubling up to memorySampleEvery, then every memorySampleEvery;
// and never sooner than memorySampleSpacing decisions per key the last
// reading read: past the first reading, the readings (two commands per
// live key: PTTL and MEMORY USAGE) stay within 2/memorySampleSpacing
// (12.5 %) of the commands the decisions send, however many keys are live.
const (
	firstMemorySample   = 1024
	memorySampleEvery   = 65536
	memorySampleSpacing = 16
)

// replayWorker sends one algorithm's decisions, one pipeline per batch,
// and aggregates them per key as they come. Its fields are its own
// goroutine's, except decisions (read by the progress display).
type replayWorker struct {
	name    string
	lim     algorithms.Scripted
	limit   limit.Limit
	prefix  string
	cfg     Config
	in      chan []replayItem
	tracker *measure.KeyTracker
	hist    *hdrhistogram.Histogram

	// rkeys are the Redis keys the calls named and not yet expired in
	// virtual time, with when they were last named (virtual and local).
	rkeys map[string]touch

	requests, acceptedReq, offered, accepted int64
	errs, failedOpen, failedClosed           int64
	firstErr                                 error
	decisions                                atomic.Int64

	nextSample int64
	peak       int64
	peakAt     time.Duration
	samples    int
	lastAt     time.Duration
	expired    int64 // keys removed as expired in virtual time
	dur        time.Duration
	// guard bounds each round trip (Timeout per replayTimeoutCalls
	// calls, a stall stops the replay) and the outage
	guard *callguard.Guard

	// batch's buffers (reuse)
	calls, send []algorithms.ScriptCall
	cmds        []*redis.Cmd
	callErrs    []error
}

// reuse returns (*buf)[:n] with every element zero, growing *buf when it
// is shorter: a batch's buffer, allocated once per worker.
func reuse[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	s := (*buf)[:n]
	clear(s)
	return s
}

// replayTimeoutCalls is how many calls of a round trip one Timeout
// covers: a deep pipeline waits behind the other algorithms' on a busy
// server.
const replayTimeoutCalls = 64

func newReplayWorker(l algorithms.Scripted, lim limit.Limit, prefix string, cfg Config) *replayWorker {
	return &replayWorker{name: l.Name(), lim: l, limit: lim, prefix: prefix, cfg: cfg,
		in: make(chan []replayItem, 8), tracker: measure.NewKeyTracker(lim.Count, lim.Window), hist: harness.NewHist(),
		rkeys: map[string]touch{}, nextSample: firstMemorySample,
		guard: callguard.New(callguard.Config{Timeout: cfg.Timeout, PerTimeout: replayTimeoutCalls, Stall: true,
			Adapt: cfg.AdaptTimeout, MaxOutage: cfg.MaxOutage})}
}

// touch is when a Redis key was last named by a call: at the virtual
// decision time, and on the local clock.
type touch struct {
	at   time.Duration
	real time.Time
}

// run decides every batch received until the channel closes. On error it
// returns at once (the caller cancels the feed).
func (w *replayWorker) run(ctx context.Context, rd *server.Redis, base time.Time, log *measure.DecisionLog) error {
	start := time.Now()
	defer func() { w.dur = time.Since(start) }()
	pipe := algorithms.NewScriptPipe(rd.Client)
	for b := range w.in {
		if ctx.Err() != nil {
			continue // drain
		}
		if err := w.batch(ctx, pipe, b, base, log); err != nil {
			return err
		}
		if w.decisions.Load() >= w.nextSample {
			if err := w.sampleMemory(ctx, rd); err != nil {
				return err
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return w.sampleMemory(ctx, rd) // the last reading removes what expired by the end
}

// batch sends one pipeline of decisions, as one round trip of the
// worker's call guard (bounded as one of Pipeline calls), and records
// their outcomes. Calls refused with NOSCRIPT (a SCRIPT FLUSH during the
// replay) are loaded and resent by the pipe. A round trip past its bound
// (a stall) or round trips failing for MaxOutage (an error reply is an
// answer) stop the replay.
func (w *replayWorker) batch(ctx context.Context, pipe *algorithms.ScriptPipe, b []replayItem, base time.Time, log *measure.DecisionLog) error {
	// the worker's buffers, reused from batch to batch
	calls, cmds, errs := reuse(&w.calls, len(b)), reuse(&w.cmds, len(b)), reuse(&w.callErrs, len(b))
	send := reuse(&w.send, len(b))[:0]
	for i, it := range b {
		c, err := w.lim.Call(w.prefix+"{"+it.a.Key+"}", it.a.Cost, algorithms.At(base.Add(it.a.At)))
		if err != nil {
			errs[i] = err
			continue
		}
		calls[i] = c
		send = append(send, c)
	}
	trip := w.guard.Begin(ctx, w.cfg.Pipeline)
	replies, execErr := trip.Exec(pipe, send)
	stall := trip.End(execErr)
	sent, recv := trip.Sent, trip.Recv
	for i := range b {
		if errs[i] == nil {
			cmds[i], replies = replies[0], replies[1:]
		}
	}
	for i, it := range b {
		for _, k := range calls[i].Keys {
			w.rkeys[k] = touch{at: it.a.At, real: recv}
		}
	}
	if stall != nil && ctx.Err() == nil {
		// virtual time: a slow round trip changes no decision and is
		// waited for; one past the bound is a hang, never counted
		return stall
	}
	rtt := max(recv.Sub(sent).Microseconds(), 1)
	_ = w.hist.RecordValues(rtt, int64(len(b)))
	failed := execErr
	if server.IsRedisError(failed) || errors.Is(failed, redis.Nil) {
		failed = nil // Redis answered
	}
	if err := w.guard.Note(failed); err != nil {
		return err
	}
	for i, it := range b {
		var d algorithms.Decision
		err := errs[i]
		if err == nil {
			reply, cerr := cmds[i].Result()
			if cerr != nil && !errors.Is(cerr, redis.Nil) {
				err = fmt.Errorf("%s: %w", w.name, cerr)
			} else if d, err = w.lim.Decode(calls[i], reply); err != nil {
				err = fmt.Errorf("%s: %w", w.name, err)
			}
		}
		cost := it.a.Cost
		if err != nil {
			w.errs++
			if w.firstErr == nil {
				w.firstErr = err
			}
			d = algorithms.Decision{DecidedAt: base.Add(it.a.At), Allowed: w.cfg.OnError == harness.FailOpen}
			if d.Allowed {
				w.failedOpen += cost
			} else {
				w.failedClosed += cost
			}
		}
		at := d.DecidedAt.Sub(base)
		w.requests++
		w.offered += cost
		if d.Allowed {
			w.acceptedReq++
			w.accepted += cost
		}
		w.tracker.Add(it.a.Key, at, cost, d.Allowed)
		w.lastAt = at
		if log != nil {
			o := harness.Outcome{Seq: it.seq, Arrival: it.a, Sent: sent, Recv: recv, Decision: d, Err: err}
			rec := o.Record(w.name, w.cfg.Name)
			_ = log.Write(&rec) // the log keeps its first error; its Close returns it
		}
	}
	w.decisions.Add(int64(len(b)))
	return nil
}

// sampleMemory reads the memory of the algorithm's live keys and
// schedules the next reading. Key expiries run on Redis's real clock, which
// a replay outpaces: a key whose TTL has run out in virtual time (touched
// at virtual time a with a TTL of d, it expired at a+d; d is its PTTL now
// plus the local time since it was touched) is removed here, as it would
// have expired in live traffic, and not counted. The others' MEMORY USAGE
// (SAMPLES 0) is summed.
func (w *replayWorker) sampleMemory(ctx context.Context, rd *server.Redis) error {
	if w.nextSample < memorySampleEvery {
		w.nextSample *= 2
	} else {
		w.nextSample += memorySampleEvery
	}
	start := time.Now()
	read := int64(len(w.rkeys))
	m, err := w.liveMemory(ctx, rd)
	w.nextSample = max(w.nextSample, w.decisions.Load()+memorySampleSpacing*read)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if server.IsTimeout(err) && w.guard.Bound(w.cfg.Pipeline) > 0 {
			return &callguard.StallError{Bound: time.Since(start), Err: err} // Redis stopped answering
		}
		return fmt.Errorf("memory reading: %w", err)
	}
	w.samples++
	if m > w.peak {
		w.peak, w.peakAt = m, w.lastAt
	}
	return nil
}

// liveMemory removes the keys expired in virtual time and sums the others'
// memory (see sampleMemory).
func (w *replayWorker) liveMemory(ctx context.Context, rd *server.Redis) (int64, error) {
	keys := make([]string, 0, len(w.rkeys))
	for k := range w.rkeys {
		keys = append(keys, k)
	}
	ttls := make([]*redis.DurationCmd, len(keys))
	mems := make([]*redis.IntCmd, len(keys))
	now := time.Now()
	_, err := rd.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			ttls[i] = p.PTTL(ctx, k)
			mems[i] = p.MemoryUsage(ctx, k, 0)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	var sum int64
	var expired []string
	for i, k := range keys {
		ttl := ttls[i].Val()
		switch {
		case ttl == -2*time.Nanosecond || ttl == -2*time.Millisecond || errors.Is(mems[i].Err(), redis.Nil): // gone
			delete(w.rkeys, k)
		case ttl > 0 && w.rkeys[k].at+ttl+now.Sub(w.rkeys[k].real) <= w.lastAt:
			expired = append(expired, k)
			delete(w.rkeys, k)
		default:
			sum += mems[i].Val()
		}
	}
	if err := server.DeleteKeys(ctx, rd.Client, expired); err != nil {
		return 0, err
	}
	w.expired += int64(len(expired))
	return sum, nil
}

// row summarizes the worker's decisions (memory at the end is added by the caller).
func (w *replayWorker) row(cfg Config, _ time.Time) measure.Row {
	p, tot := w.tracker.Summary()
	p.PeakMemoryBytes, p.PeakMemoryAtMS, p.MemorySamples = w.peak, float64(w.peakAt.Microseconds())/1000, w.samples
	row := measure.Row{
		Algorithm: w.name, Scenario: cfg.Name, LimitDesc: w.lim.Describe(),
		Limit: w.limit.Count, WindowMS: w.limit.Window.Milliseconds(), Clock: string(harness.VirtualClock),
		Requests: w.requests, AcceptedRequests: w.acceptedReq, Offered: w.offered, Accepted: w.accepted,
		MaxInWindow: tot.MaxInWindow, MaxWindowEndMS: float64(tot.MaxWindowEnd.Microseconds()) / 1000,
		Ratio: float64(tot.MaxInWindow) / float64(w.limit.Count), Ideal: tot.Ideal, Fidelity: 1,
		Errors: w.errs, FailedOpen: w.failedOpen, FailedClosed: w.failedClosed,
		DurationMS: w.dur.Milliseconds(), PerKey: &p, Trailing: w.tracker.Trailing(0),
	}
	if row.Ideal > 0 {
		row.Fidelity = float64(row.Accepted) / float64(row.Ideal)
	}
	if w.hist.TotalCount() > 0 {
		row.P50US = w.hist.ValueAtQuantile(50)
		row.P99US = w.hist.ValueAtQuantile(99)
		row.P999US = w.hist.ValueAtQuantile(99.9)
		row.MaxUS = w.hist.Max()
	}
	return row
}
