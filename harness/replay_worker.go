package harness

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/measure"
)

// Memory readings during a replay: after firstMemorySample decisions, then
// at each doubling up to memorySampleEvery, then every memorySampleEvery.
const (
	firstMemorySample = 1024
	memorySampleEvery = 65536
)

// replayWorker sends one algorithm's decisions, one pipeline per batch,
// and aggregates them per key as they come. Its fields are its own
// goroutine's, except decisions (read by the progress display).
type replayWorker struct {
	name    string
	lim     algorithms.Scripted
	limit   algorithms.Limit
	prefix  string
	cfg     ReplayConfig
	in      chan []replayItem
	tracker *measure.KeyTracker
	hist    *hdrhistogram.Histogram

	rkeys    map[string]struct{} // Redis keys the calls named, for memory readings
	rkeyList []string

	requests, acceptedReq, offered, accepted int64
	errs, failedOpen, failedClosed           int64
	decisions                                atomic.Int64

	nextSample   int64
	peak         int64
	peakAt       time.Duration
	samples      int
	lastAt       time.Duration
	dur          time.Duration
	failingSince time.Time
}

func newReplayWorker(l algorithms.Scripted, lim algorithms.Limit, prefix string, cfg ReplayConfig) *replayWorker {
	return &replayWorker{name: l.Name(), lim: l, limit: lim, prefix: prefix, cfg: cfg,
		in: make(chan []replayItem, 8), tracker: measure.NewKeyTracker(lim.Limit, lim.Window), hist: newHist(),
		rkeys: map[string]struct{}{}, nextSample: firstMemorySample}
}

// run decides every batch received until the channel closes. On error it
// returns at once (the caller cancels the feed).
func (w *replayWorker) run(ctx context.Context, rd *engine.Redis, base time.Time, log *measure.DecisionLog) error {
	start := time.Now()
	defer func() { w.dur = time.Since(start) }()
	pipe := rd.Client.Pipeline()
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
	return nil
}

// batch sends one pipeline of decisions and records their outcomes.
func (w *replayWorker) batch(ctx context.Context, pipe redis.Pipeliner, b []replayItem, base time.Time, log *measure.DecisionLog) error {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if w.cfg.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, w.cfg.Timeout)
	}
	defer cancel()
	calls := make([]algorithms.ScriptCall, len(b))
	cmds := make([]*redis.Cmd, len(b))
	errs := make([]error, len(b))
	for i, it := range b {
		c, err := w.lim.Call(w.prefix+"{"+it.a.Key+"}", it.a.Cost, algorithms.At(base.Add(it.a.At)))
		if err != nil {
			errs[i] = err
			continue
		}
		calls[i] = c
		for _, k := range c.Keys {
			if _, ok := w.rkeys[k]; !ok {
				w.rkeys[k] = struct{}{}
				w.rkeyList = append(w.rkeyList, k)
			}
		}
		cmds[i] = pipe.EvalSha(cctx, c.Script.Hash(), c.Keys, c.Args...)
	}
	sent := time.Now()
	_, execErr := pipe.Exec(cctx)
	recv := time.Now()
	rtt := max(recv.Sub(sent).Microseconds(), 1)
	_ = w.hist.RecordValues(rtt, int64(len(b)))
	if err := w.noteOutage(execErr, recv); err != nil {
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
			d = algorithms.Decision{DecidedAt: base.Add(it.a.At), Allowed: w.cfg.OnError == FailOpen}
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
			rec := measure.Record{
				Algorithm: w.name, Scenario: w.cfg.Name,
				Seq: it.seq, Client: it.a.Client, Key: it.a.Key, Cost: cost,
				AtUS:   it.a.At.Microseconds(),
				SentUS: sent.UnixMicro(), RecvUS: recv.UnixMicro(),
				DecidedAtUS: d.DecidedAt.UnixMicro(), Allowed: d.Allowed,
				Remaining: d.Remaining, RetryAfterUS: d.RetryAfter.Microseconds(),
				LatencyUS: rtt,
			}
			if err != nil {
				rec.Error = err.Error()
			}
			_ = log.Write(&rec)
		}
	}
	w.decisions.Add(int64(len(b)))
	return nil
}

// noteOutage tracks round trips that failed as a whole (not an error
// reply): failing for longer than MaxOutage stops the replay.
func (w *replayWorker) noteOutage(err error, now time.Time) error {
	if err == nil || isRedisError(err) || errors.Is(err, redis.Nil) {
		w.failingSince = time.Time{}
		return nil
	}
	if w.failingSince.IsZero() {
		w.failingSince = now
	}
	if d := now.Sub(w.failingSince); w.cfg.MaxOutage > 0 && d >= w.cfg.MaxOutage {
		return fmt.Errorf("%w for %s (last error: %v)", ErrOutage, d.Round(time.Millisecond), err)
	}
	return nil
}

// sampleMemory reads MEMORY USAGE summed over the keys named so far and
// schedules the next reading.
func (w *replayWorker) sampleMemory(ctx context.Context, rd *engine.Redis) error {
	if w.nextSample < memorySampleEvery {
		w.nextSample *= 2
	} else {
		w.nextSample += memorySampleEvery
	}
	m, err := engine.MemoryUsage(ctx, rd.Client, w.rkeyList)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("memory reading: %w", err)
	}
	w.samples++
	if m > w.peak {
		w.peak, w.peakAt = m, w.lastAt
	}
	return nil
}

// row summarizes the worker's decisions (memory at the end is added by the caller).
func (w *replayWorker) row(cfg ReplayConfig, _ time.Time) measure.Row {
	p, tot := w.tracker.Summary()
	p.PeakMemoryBytes, p.PeakMemoryAtMS, p.MemorySamples = w.peak, float64(w.peakAt.Microseconds())/1000, w.samples
	row := measure.Row{
		Algorithm: w.name, Scenario: cfg.Name, LimitDesc: w.lim.Describe(),
		Limit: w.limit.Limit, WindowMS: w.limit.Window.Milliseconds(), Clock: string(VirtualClock),
		Requests: w.requests, AcceptedRequests: w.acceptedReq, Offered: w.offered, Accepted: w.accepted,
		MaxInWindow: tot.MaxInWindow, MaxWindowEndMS: float64(tot.MaxWindowEnd.Microseconds()) / 1000,
		Ratio: float64(tot.MaxInWindow) / float64(w.limit.Limit), Ideal: tot.Ideal, Fidelity: 1,
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
