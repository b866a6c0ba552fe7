package harness

import (
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

// Job is one limiter to run one stream of arrivals: what goes in is
// Arrivals, what comes out goes to Sink.
type Job struct {
	Limiter algorithms.Limiter
	// Limit is what the metrics judge against (ratio = max_in_window /
	// Limit.Count); its Window is also the one the anchor is aligned to.
	Limit limit.Limit
	// Scenario names the job's decisions (decisions.jsonl, rows, progress).
	Scenario string
	// Prefix is prepended to every arrival's key, which is hash-tagged:
	// "<Prefix>{<key>}".
	Prefix string
	// Skew, when set, shifts the clock each simulated client injects:
	// client c stamps its requests with true time + Skew[c % len(Skew)].
	// Only injected clocks (virtual, client) are skewed.
	Skew []time.Duration
	// Arrivals are the job's arrivals, At counted from the anchor, sorted
	// by At (Drive: a key's in time order), made as they are read: a run ranges
	// over it once, so a stream that can be read only once (a traffic
	// file) will do; to run a Job again, give it a sequence that can be
	// ranged over again (a slice's values: WithSchedule). How a run reads
	// them: a pipelined virtual-time run (Execute, Drive) reads them a
	// round trip at a time, holding one round trip's arrivals (thinned:
	// and the burst under way); Execute's other virtual-time runs collect
	// a job's when it starts and drop them when it ends; a real-time
	// Execute collects every job's at its start; Drive otherwise reads
	// them one call at a time; Adaptive reads only the first (the
	// anchor's). Nil: no arrival.
	Arrivals iter.Seq[scenarios.Arrival]
	// Calls is how many arrivals Arrivals yields: Execute's progress
	// total, nothing else (zero: not counted).
	Calls int
	// Sink, when set, is told the job's outcomes (see Sink); nil discards
	// them (Log, Latency and the rows of Run still see every decision).
	Sink Sink
	// Thin, in a pipelined virtual-time run (Runner.Pipeline or Expiry, a
	// Scripted limiter), sends only probes of the rest of a burst once
	// ThinAfter of its arrivals in a row came back denied (see thin.go:
	// what it keeps and what it may miss). The arrivals not sent have no
	// outcome (Outcome.Seq still counts every arrival) and are counted in
	// JobResult.Skipped. Ignored on other runs. False: every arrival is
	// sent.
	Thin bool
}

// WithSchedule returns j running s: its arrivals (Arrivals ranges over
// s.Arrivals, which the run does not change), their count (Calls) and its
// scenario's name.
func (j Job) WithSchedule(s scenarios.Schedule) Job {
	j.Arrivals, j.Calls, j.Scenario = slices.Values(s.Arrivals), len(s.Arrivals), s.Scenario
	return j
}

// Sink takes one job's outcomes as they are decided (Job.Sink). Its
// methods are called from one goroutine at a time, never after End.
//
// In virtual time (Execute, Adaptive, Drive) Add is told each outcome in
// the order of the arrivals, as soon as it and those before it are
// decided: after each round trip of a pipelined run, from the run's
// goroutine for the job, so memory does not grow with the arrivals. In
// real time Add is told each outcome as its call returns: one simulated
// client's in order, clients' interleaved as they were decided (Seq gives
// the arrivals' order).
type Sink interface {
	// Anchor is told the job's anchor (JobResult.Anchor) before its
	// first outcome.
	Anchor(anchor time.Time)
	// Add is told one outcome. An error stops the run with it as the
	// cause (no outcome of the job is told after it).
	Add(o Outcome) error
	// End is told that the job is over: no outcome follows.
	End()
}

// SinkFunc is a Sink that calls f with each outcome (Add); Anchor and End
// do nothing.
type SinkFunc func(o Outcome) error

// Anchor implements Sink: nothing.
func (SinkFunc) Anchor(time.Time) {}

// Add implements Sink: f(o).
func (f SinkFunc) Add(o Outcome) error { return f(o) }

// End implements Sink: nothing.
func (SinkFunc) End() {}

// Collector is a Sink that keeps every outcome it is told, in the order
// told (Sink says which: sort by Seq for the arrivals' order in real
// time). The zero value is ready; one Collector serves one job.
type Collector struct {
	Outcomes []Outcome
}

// Anchor implements Sink: nothing (JobResult.Anchor has it).
func (c *Collector) Anchor(time.Time) {}

// Add implements Sink: o is appended to Outcomes.
func (c *Collector) Add(o Outcome) error {
	c.Outcomes = append(c.Outcomes, o)
	return nil
}

// End implements Sink: nothing.
func (c *Collector) End() {}

// check is nil when j can run: its Limit.Window, which the anchor is
// aligned to, is set.
func (j Job) check() error {
	if j.Limit.Window <= 0 {
		return fmt.Errorf("limit: window must be > 0, got %s", j.Limit.Window)
	}
	return nil
}

// ClockSkew is the skew of client c's clock (zero without Skew).
func (j Job) ClockSkew(c int) time.Duration {
	if len(j.Skew) == 0 {
		return 0
	}
	return j.Skew[c%len(j.Skew)]
}

// JobResult is what a run measured for one job; its outcomes went to the
// job's Sink.
type JobResult struct {
	Job Job
	// Anchor is the instant the arrivals' At offsets count from, on the
	// run's clock (virtual, Redis or local); zero for a job with no
	// arrival in Drive.
	Anchor time.Time
	// Latency holds every call's round trip, µs.
	Latency  *hdrhistogram.Histogram
	Duration time.Duration
	// Skipped is how many arrivals thinning left out (Job.Thin); zero
	// when every arrival was sent.
	Skipped int64
}

// teller tells one job's Sink its outcomes for a run: it passes each to
// the sink until the sink's first error, which stops the run, and it
// serializes the calls of a job's concurrent clients. A nil sink is told
// nothing.
type teller struct {
	sink   Sink
	stop   func(error)
	mu     sync.Mutex
	failed bool
}

func (t *teller) anchor(a time.Time) {
	if t.sink != nil {
		t.sink.Anchor(a)
	}
}

func (t *teller) add(o Outcome) {
	if t.sink == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed {
		return
	}
	if err := t.sink.Add(o); err != nil {
		t.failed = true
		t.stop(err)
	}
}

func (t *teller) end() {
	if t.sink != nil {
		t.sink.End()
	}
}

// first is the first of arrivals (false when there is none); it stops
// ranging there.
func first(arrivals iter.Seq[scenarios.Arrival]) (scenarios.Arrival, bool) {
	if arrivals != nil {
		for a := range arrivals {
			return a, true
		}
	}
	return scenarios.Arrival{}, false
}

// peek is the first of arrivals (false when there is none) and next,
// which returns the same arrivals in order, that first included, from one
// range over arrivals; stop ends that range (call it when done).
func peek(arrivals iter.Seq[scenarios.Arrival]) (a scenarios.Arrival, ok bool, next func() (scenarios.Arrival, bool), stop func()) {
	if arrivals == nil {
		return a, false, func() (scenarios.Arrival, bool) { return a, false }, func() {}
	}
	read, stop := iter.Pull(arrivals)
	a, ok = read()
	pending := ok
	next = func() (scenarios.Arrival, bool) {
		if pending {
			pending = false
			return a, true
		}
		return read()
	}
	return a, ok, next, stop
}

// collect is every arrival of job j, in order, in a slice made for
// j.Calls of them (a schedule may hold millions: no slack, no regrowth
// when Calls is right).
func collect(j Job) []scenarios.Arrival {
	if j.Arrivals == nil {
		return nil
	}
	arr := make([]scenarios.Arrival, 0, max(j.Calls, 0))
	for a := range j.Arrivals {
		arr = append(arr, a)
	}
	return arr
}
