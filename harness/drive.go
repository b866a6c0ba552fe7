package harness

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/scenarios"
)

// Drive decides one job's arrivals in virtual time, read from arrivals in
// order as they are needed, and tells sink each outcome in that order: the
// driver for a study that reads its traffic as it goes and aggregates the
// outcomes itself (a replay, a fill), so that neither the arrivals nor the
// outcomes are held. j names the limiter, its Prefix, Skew and Limit; its
// Schedule gives the scenario (the decisions' name in Log) and the window
// the anchor is aligned to (Schedule.Arrivals, Build, Stream, Sink and
// Thin are not used). Each arrival's At counts from the anchor, the first
// window boundary at or after VirtualEpoch; At must not decrease.
//
// The calls go as Execute's in virtual time: a Scripted limiter's
// Pipeline at a time (one when Pipeline is zero) with Expiry as set, any
// other limiter one call at a time; the one call guard bounds them
// (Timeout, CallsPerTimeout, AdaptTimeout, MaxOutage; a stall stops the
// drive) and a failed call is an outcome with Err set, counted as OnError
// says. sink is called from Drive's goroutine, between round trips, with
// Seq counting the arrivals from 0; an error it returns stops the drive
// and is returned.
//
// The JobResult has the anchor, every call's latency and the duration;
// its Outcomes are empty (sink took them). The error is the cause that
// stopped the drive: sink's, a *callguard.StallError, callguard.ErrOutage,
// a call the run cannot go on after (a script error, a refused command),
// ctx's cause, or the decision log's. A clock other than virtual is an
// error. A Runner drives one job at a time: for several at once, use one
// Runner each.
func (r *Runner) Drive(ctx context.Context, j Job, arrivals iter.Seq[scenarios.Arrival], sink func(Outcome) error) (JobResult, error) {
	if r.Clock != VirtualClock && r.Clock != "" {
		return JobResult{}, fmt.Errorf("drive: virtual time only, not the %q clock", r.Clock)
	}
	outer := ctx
	ctx, cancel := r.begin(ctx)
	defer cancel(nil)
	j.Schedule.Arrivals, j.Build, j.Thin = nil, nil, false
	jr := JobResult{Job: j, Latency: NewHist(), Anchor: virtualAnchor(j.Schedule)}
	j.Sink, j.Stream = &sinkFunc{sink: sink, stop: r.stop}, arrivals
	start := time.Now()
	if r.pipelined(j) {
		r.runStreamed(ctx, 0, j, jr.Anchor, jr.Latency)
	} else {
		r.driveEach(ctx, j, jr.Anchor, jr.Latency.RecordValue)
	}
	jr.Duration = time.Since(start)
	return jr, r.finish(ctx, outer)
}

// driveEach decides j.Stream's arrivals one call at a time, in order,
// telling j.Sink each outcome and record its latency (µs).
func (r *Runner) driveEach(ctx context.Context, j Job, anchor time.Time, record func(int64) error) {
	seq := 0
	for a := range j.Stream {
		if ctx.Err() != nil {
			break
		}
		o := r.decide(ctx, 0, j, seq, a, anchor, algorithms.At(anchor.Add(a.At)))
		_ = record(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
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
