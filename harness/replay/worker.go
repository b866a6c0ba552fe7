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
	"github.com/ratelab/ratelab/scenarios"
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

// replayWorker decides one algorithm's records through the harness's
// driver (harness.Runner.Drive: the pipelined virtual-time calls, their
// call guard, the decisions log) and aggregates the outcomes per key as
// they come. Its fields are its own goroutine's, except decisions (read
// by the progress display).
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
	base       time.Time // the virtual instant t = 0 is replayed at
}

// replayTimeoutCalls is how many calls of a round trip one Timeout
// covers: a deep pipeline waits behind the other algorithms' on a busy
// server.
const replayTimeoutCalls = 64

func newReplayWorker(l algorithms.Scripted, lim limit.Limit, prefix string, cfg Config) *replayWorker {
	return &replayWorker{name: l.Name(), lim: l, limit: lim, prefix: prefix, cfg: cfg,
		in: make(chan []replayItem, 8), tracker: measure.NewKeyTracker(lim.Count, lim.Window), hist: harness.NewHist(),
		rkeys: map[string]touch{}, nextSample: firstMemorySample}
}

// touch is when a Redis key was last named by a call: at the virtual
// decision time, and on the local clock.
type touch struct {
	at   time.Duration
	real time.Time
}

// run decides every batch received until the channel closes, Pipeline
// decisions per round trip, the memory read between round trips when a
// reading is due. On error it returns at once (the caller cancels the
// feed): a round trip past its bound (a stall) or round trips failing for
// MaxOutage (an error reply is an answer) stop the replay; calls refused
// with NOSCRIPT (a SCRIPT FLUSH during the replay) are loaded and resent.
func (w *replayWorker) run(ctx context.Context, rd *server.Redis, base time.Time, log *measure.DecisionLog) error {
	w.base = base
	r := &harness.Runner{Redis: rd.Client, Clock: harness.VirtualClock, Log: log, Pipeline: w.cfg.Pipeline,
		Timeout: w.cfg.Timeout, CallsPerTimeout: replayTimeoutCalls, AdaptTimeout: w.cfg.AdaptTimeout,
		OnError: w.cfg.OnError, MaxOutage: w.cfg.MaxOutage}
	records := func(yield func(scenarios.Arrival) bool) {
		for b := range w.in {
			for _, it := range b {
				if !yield(it.a) {
					return
				}
			}
		}
	}
	job := harness.Job{Limiter: w.lim, Limit: w.limit, Scenario: w.cfg.Name, Prefix: w.prefix, Arrivals: records,
		Sink: harness.SinkFunc(func(o harness.Outcome) error { return w.add(ctx, rd, o) })}
	jr, err := r.Drive(ctx, job)
	w.hist, w.dur = jr.Latency, jr.Duration
	if err != nil || ctx.Err() != nil {
		return err
	}
	return w.sampleMemory(ctx, rd) // the last reading removes what expired by the end
}

// add aggregates one outcome (Seq counts the records from 0) and, after
// the last outcome of a round trip, reads the memory when a reading is due.
func (w *replayWorker) add(ctx context.Context, rd *server.Redis, o harness.Outcome) error {
	w.rkeys[w.prefix+"{"+o.Arrival.Key+"}"] = touch{at: o.Arrival.At, real: o.Recv}
	cost := o.Arrival.Cost
	if o.Err != nil {
		w.errs++
		if w.firstErr == nil {
			w.firstErr = o.Err
		}
		if o.Decision.Allowed {
			w.failedOpen += cost
		} else {
			w.failedClosed += cost
		}
	}
	at := o.Decision.DecidedAt.Sub(w.base)
	w.requests++
	w.offered += cost
	if o.Decision.Allowed {
		w.acceptedReq++
		w.accepted += cost
	}
	w.tracker.Add(o.Arrival.Key, at, cost, o.Decision.Allowed)
	w.lastAt = at
	n := w.decisions.Add(1)
	if (o.Seq+1)%w.cfg.Pipeline == 0 && n >= w.nextSample {
		return w.sampleMemory(ctx, rd)
	}
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
		if server.IsTimeout(err) && w.cfg.Timeout > 0 {
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
