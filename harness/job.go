package harness

import (
	"iter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

// Job is one limiter to run one schedule.
type Job struct {
	Limiter algorithms.Limiter
	// Limit is what the metrics judge against (ratio = max_in_window / Limit.Count).
	Limit    limit.Limit
	Schedule scenarios.Schedule
	// Prefix is prepended to every arrival's key, which is hash-tagged:
	// "<Prefix>{<key>}".
	Prefix string
	// Skew, when set, shifts the clock each simulated client injects:
	// client c stamps its requests with true time + Skew[c % len(Skew)].
	// Only injected clocks (virtual, client) are skewed.
	Skew []time.Duration
	// Sink, when set, takes the job's outcomes in place of its JobResult,
	// whose Outcomes are then empty: a virtual-time run tells it each
	// outcome in schedule order as soon as it and those before it are
	// decided (from the job's goroutine), so memory does not grow with
	// the schedule; a real-time run, once the job is over. Adaptive
	// ignores it.
	Sink OutcomeSink
	// Build, when set, makes the schedule's arrivals in place of
	// Schedule.Arrivals (then empty; its Scenario and Params still name
	// and time the job), and Calls is how many it makes (the progress
	// total). A virtual-time run builds a job's arrivals when it starts
	// the job and drops them when the job ends (JobResult.Job's are then
	// empty): with Sink, a run of many long jobs holds the arrivals and
	// outcomes of the Parallel jobs under way only. A real-time run builds
	// them all at its start. Adaptive ignores it.
	Build func() []scenarios.Arrival
	Calls int
	// Stream, when set with Build, makes the same arrivals as Build, in
	// order, as they are read (scenarios.Trial.Stream). A pipelined
	// virtual-time run (Runner.Pipeline or Expiry, a Scripted limiter) of
	// a job it does not thin reads them from it a round trip at a time
	// instead of building them: with Sink, the job holds a round trip's
	// arrivals and outcomes, not the schedule's. Other runs use Build;
	// without Build it is ignored.
	Stream iter.Seq[scenarios.Arrival]
	// Thin, in a pipelined virtual-time run (Runner.Pipeline or Expiry, a
	// Scripted limiter), sends only probes of the rest of a burst once
	// ThinAfter of its arrivals in a row came back denied (see thin.go:
	// what it keeps and what it may miss). The arrivals not sent have no
	// outcome (Outcome.Seq still indexes the whole schedule) and are
	// counted in JobResult.Skipped. Ignored on other runs. False: every
	// arrival is sent.
	Thin bool
}

// OutcomeSink takes one job's outcomes as they are decided (Job.Sink).
// Its methods are called from one goroutine at a time.
type OutcomeSink interface {
	// Anchor is told the job's anchor (JobResult.Anchor) before its
	// first outcome.
	Anchor(anchor time.Time)
	// Add is told each outcome, in schedule order; a cancelled run stops
	// short.
	Add(o Outcome)
	// End is told that the job is over: no outcome follows.
	End()
}

// ClockSkew is the skew of client c's clock (zero without Skew).
func (j Job) ClockSkew(c int) time.Duration {
	if len(j.Skew) == 0 {
		return 0
	}
	return j.Skew[c%len(j.Skew)]
}

// JobResult is what Execute measured for one job.
type JobResult struct {
	Job Job
	// Anchor is the instant the schedule's At offsets count from, on the
	// run's clock (virtual, Redis or local).
	Anchor time.Time
	// Outcomes are in schedule order; arrivals not sent (cancelled) are
	// missing; empty with Job.Sink, which took them.
	Outcomes []Outcome
	// Latency holds every call's round trip, µs.
	Latency  *hdrhistogram.Histogram
	Duration time.Duration
	// Skipped is how many arrivals thinning left out (Job.Thin); zero
	// when every arrival was sent.
	Skipped int64
}

// built is j with its arrivals in Schedule (made by Build when set).
func (j Job) built() Job {
	if j.Build != nil {
		j.Schedule.Arrivals = j.Build()
	}
	return j
}
