package harness

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/scenarios"
)

// Drive decides one job's arrivals, ranging over j.Arrivals once, in
// order, as they are needed, and tells j.Sink each outcome in that order:
// the driver for a study that reads its traffic as it goes (a replay
// reading a file, a fill) and aggregates the outcomes itself, so that
// neither the arrivals nor the outcomes are held. j.Limit.Window is the
// window the anchor is aligned to, j.Scenario names the decisions in Log;
// j.Calls and j.Thin are not used. Each arrival's At counts from the
// anchor; a key's arrivals come in time order (arrivals of different
// keys may go back).
//
// In virtual time the anchor is the first window boundary at or after
// VirtualEpoch and the calls go as Execute's: a Scripted limiter's
// Pipeline at a time (one when Pipeline is zero) with Expiry as set, any
// other limiter one call at a time. In real time (RedisClock,
// ClientClock) the anchor is the one Execute picks for arrivals that
// start with j's first (Lead, Unaligned; told to Anchored), and each
// arrival is sent when due on the run's clock, one call at a time from
// Drive's goroutine: a late one goes at once and holds up those after it
// (for concurrent clients, Execute, or one Drive each). Either way the
// one call guard bounds the calls (Timeout, CallsPerTimeout,
// AdaptTimeout, MaxOutage; in virtual time a stall stops the drive) and a
// failed call is an outcome with Err set, counted as OnError says. The
// Sink is called from Drive's goroutine, between round trips, with Seq
// counting the arrivals from 0; an error it returns stops the drive and
// is returned. It is told the anchor before the first outcome (in real
// time: only when there is an arrival) and End once the drive is over.
//
// The JobResult has the anchor (zero in real time when there was no
// arrival), every call's latency and the duration. The error is the cause
// that stopped the drive: the Sink's, a *callguard.StallError,
// callguard.ErrOutage, a call the run cannot go on after (a script error,
// a refused command), ctx's cause, the decision log's, or reading the
// Redis clock for a RedisClock anchor; an unknown clock and a j without
// Limit.Window are errors before any call. A Runner drives one job at a
// time: for several at once, use one Runner each.
func (r *Runner) Drive(ctx context.Context, j Job) (JobResult, error) {
	virtual := r.Clock == VirtualClock || r.Clock == ""
	if !virtual && r.Clock != RedisClock && r.Clock != ClientClock {
		return JobResult{}, fmt.Errorf("unknown clock %q", r.Clock)
	}
	if err := j.check(); err != nil {
		return JobResult{}, err
	}
	outer := ctx
	ctx, cancel := r.begin(ctx)
	defer cancel(nil)
	j.Thin = false
	jr := JobResult{Job: j, Latency: NewHist()}
	tl := &teller{sink: j.Sink, stop: r.stop}
	start := time.Now()
	switch {
	case virtual:
		jr.Anchor = virtualAnchor(0, j.Limit.Window)
		if r.pipelined(j) {
			r.runStreamed(ctx, j, tl, func(scenarios.Arrival) time.Time { return jr.Anchor }, jr.Latency)
		} else {
			tl.anchor(jr.Anchor)
			r.driveEach(ctx, j, tl, jr.Anchor, jr.Latency)
		}
	default:
		var err error
		if jr.Anchor, err = r.driveReal(ctx, j, tl, jr.Latency); err != nil {
			tl.end()
			return jr, err
		}
	}
	tl.end()
	jr.Duration = time.Since(start)
	return jr, r.finish(ctx, outer)
}

// driveReal decides j's arrivals in real time, in order, each when due
// (decideWhenDue), telling tl the anchor and each outcome and h its
// latency; it returns the anchor (zero for no arrival). Errors: the Redis
// clock's.
func (r *Runner) driveReal(ctx context.Context, j Job, tl *teller, h *hdrhistogram.Histogram) (time.Time, error) {
	if j.Arrivals == nil {
		return time.Time{}, nil
	}
	next, stop := iter.Pull(j.Arrivals)
	defer stop()
	a, ok := next()
	if !ok {
		return time.Time{}, nil
	}
	anchor, offset, err := r.realAnchor(ctx, j.Scenario, j.Limit.Window, []scenarios.Arrival{a})
	if err != nil {
		return time.Time{}, err
	}
	if r.Anchored != nil {
		r.Anchored(anchor, offset)
	}
	tl.anchor(anchor)
	for seq := 0; ok; seq++ {
		o, sent := r.decideWhenDue(ctx, j, seq, a, anchor, offset)
		if !sent {
			break
		}
		_ = h.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
		tl.add(o)
		if ctx.Err() != nil {
			break
		}
		a, ok = next()
	}
	return anchor, nil
}

// driveEach decides j's arrivals in virtual time one call at a time, in
// order, telling tl each outcome and h its latency.
func (r *Runner) driveEach(ctx context.Context, j Job, tl *teller, anchor time.Time, h *hdrhistogram.Histogram) {
	if j.Arrivals == nil {
		return
	}
	seq := 0
	for a := range j.Arrivals {
		if ctx.Err() != nil {
			break
		}
		o := r.decide(ctx, j, seq, a, anchor, algorithms.At(anchor.Add(a.At)))
		_ = h.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
		tl.add(o)
		seq++
	}
}

// Reloads is how many times the Runner's calls met NOSCRIPT and loaded
// their scripts again (a SCRIPT FLUSH or a failover during its runs).
func (r *Runner) Reloads() int64 { return r.guard().Reloads() }
