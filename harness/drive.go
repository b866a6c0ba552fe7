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

// Drive decides one job's arrivals, read from arrivals in order as they
// are needed, and tells sink each outcome in that order: the driver for a
// study that reads its traffic as it goes and aggregates the outcomes
// itself (a replay, a fill), so that neither the arrivals nor the outcomes
// are held. j names the limiter, its Prefix, Skew and Limit; its Schedule
// gives the scenario (the decisions' name in Log) and the window the
// anchor is aligned to (Schedule.Arrivals, Build, Stream, Sink and Thin
// are not used). Each arrival's At counts from the anchor; a key's
// arrivals come in time order (arrivals of different keys may go back).
//
// In virtual time the anchor is the first window boundary at or after
// VirtualEpoch and the calls go as Execute's: a Scripted limiter's
// Pipeline at a time (one when Pipeline is zero) with Expiry as set, any
// other limiter one call at a time. In real time (RedisClock,
// ClientClock) the anchor is the one Execute picks for a schedule that
// starts with the stream's first arrival (Lead, Unaligned; told to
// Anchored), and each arrival is sent when due on the run's clock, one
// call at a time from Drive's goroutine: a late one goes at once and holds
// up those after it (for concurrent clients, Execute, or one Drive each).
// Either way the one call guard bounds the calls (Timeout,
// CallsPerTimeout, AdaptTimeout, MaxOutage; in virtual time a stall stops
// the drive) and a failed call is an outcome with Err set, counted as
// OnError says. sink is called from Drive's goroutine, between round
// trips, with Seq counting the arrivals from 0; an error it returns stops
// the drive and is returned.
//
// The JobResult has the anchor (zero when arrivals was empty), every
// call's latency and the duration; its Outcomes are empty (sink took
// them). The error is the cause that stopped the drive: sink's, a
// *callguard.StallError, callguard.ErrOutage, a call the run cannot go on
// after (a script error, a refused command), ctx's cause, the decision
// log's, or reading the Redis clock for a RedisClock anchor; an unknown
// clock is an error. A Runner drives one job at a time: for several at
// once, use one Runner each.
func (r *Runner) Drive(ctx context.Context, j Job, arrivals iter.Seq[scenarios.Arrival], sink func(Outcome) error) (JobResult, error) {
	virtual := r.Clock == VirtualClock || r.Clock == ""
	if !virtual && r.Clock != RedisClock && r.Clock != ClientClock {
		return JobResult{}, fmt.Errorf("unknown clock %q", r.Clock)
	}
	outer := ctx
	ctx, cancel := r.begin(ctx)
	defer cancel(nil)
	j.Schedule.Arrivals, j.Build, j.Thin = nil, nil, false
	jr := JobResult{Job: j, Latency: NewHist()}
	j.Sink, j.Stream = &sinkFunc{sink: sink, stop: r.stop}, arrivals
	start := time.Now()
	switch {
	case virtual:
		jr.Anchor = virtualAnchor(j.Schedule)
		if r.pipelined(j) {
			r.runStreamed(ctx, 0, j, jr.Anchor, jr.Latency)
		} else {
			r.driveEach(ctx, j, jr.Anchor, jr.Latency)
		}
	default:
		var err error
		if jr.Anchor, err = r.driveReal(ctx, j, jr.Latency); err != nil {
			return jr, err
		}
	}
	jr.Duration = time.Since(start)
	return jr, r.finish(ctx, outer)
}

// driveReal decides j.Stream's arrivals in real time, in order, each when
// due (decideWhenDue), telling j.Sink each outcome and h its latency; it
// returns the anchor (zero for no arrival). Errors: the Redis clock's.
func (r *Runner) driveReal(ctx context.Context, j Job, h *hdrhistogram.Histogram) (time.Time, error) {
	next, stop := iter.Pull(j.Stream)
	defer stop()
	a, ok := next()
	if !ok {
		return time.Time{}, nil
	}
	first := j.Schedule
	first.Arrivals = []scenarios.Arrival{a}
	anchor, offset, err := r.realAnchor(ctx, first)
	if err != nil {
		return time.Time{}, err
	}
	if r.Anchored != nil {
		r.Anchored(anchor, offset)
	}
	for seq := 0; ok; seq++ {
		o, sent := r.decideWhenDue(ctx, 0, j, seq, a, anchor, offset)
		if !sent {
			break
		}
		_ = h.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
		j.Sink.Add(o)
		if ctx.Err() != nil {
			break
		}
		a, ok = next()
	}
	return anchor, nil
}

// driveEach decides j.Stream's arrivals in virtual time one call at a
// time, in order, telling j.Sink each outcome and h its latency.
func (r *Runner) driveEach(ctx context.Context, j Job, anchor time.Time, h *hdrhistogram.Histogram) {
	seq := 0
	for a := range j.Stream {
		if ctx.Err() != nil {
			break
		}
		o := r.decide(ctx, 0, j, seq, a, anchor, algorithms.At(anchor.Add(a.At)))
		_ = h.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
		j.Sink.Add(o)
		seq++
	}
}

// sinkFunc is the OutcomeSink of a Drive: it passes each outcome to sink
// and stops the drive at sink's first error (nothing is passed after it).
type sinkFunc struct {
	sink   func(Outcome) error
	stop   func(error)
	failed bool
}

func (s *sinkFunc) Anchor(time.Time) {}
func (s *sinkFunc) End()             {}

func (s *sinkFunc) Add(o Outcome) {
	if s.failed {
		return
	}
	if err := s.sink(o); err != nil {
		s.failed = true
		s.stop(err)
	}
}

// Reloads is how many times the Runner's calls met NOSCRIPT and loaded
// their scripts again (a SCRIPT FLUSH or a failover during its runs).
func (r *Runner) Reloads() int64 { return r.guard().Reloads() }
