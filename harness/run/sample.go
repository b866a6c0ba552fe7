package run

// How a virtual-time run's figures are made: its pipelining, the latency
// sample timed apart from it, and the notes that say what the latency and
// memory columns are.

import (
	"context"
	"fmt"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// How a virtual-time run sends its calls: Pipeline calls per round trip
// (harness.Runner.Pipeline: arrivals at one instant from different clients
// go in schedule order), Parallel jobs (algorithms of one scenario, each on
// its own keys) at once. Virtual time makes the decisions independent of
// the speed they are made at: the figures of every row but latency are
// those of one call at a time.
const (
	Pipeline = 256
	Parallel = 4
)

// LatencySample is how many decisions per job a virtual-time run times one
// call at a time (sampleLatency): the first LatencySample arrivals of the
// schedule, on keys of their own.
const LatencySample = 64

// LatencyNote is the note of a virtual-time run's results on where its
// latency columns come from.
var LatencyNote = fmt.Sprintf("latency (p50, p99 µs) is from a sample of its own: each scenario's first %d arrivals sent again one call at a time, per algorithm, on keys of their own; "+
	"the run's decisions go %d per pipelined round trip, %d algorithms at once (virtual time: the other columns do not depend on it)", LatencySample, Pipeline, Parallel)

// MemoryNote is the note of a run's results on what its memory column is,
// and what to plan Redis memory with instead; "" when no row has keys.
func MemoryNote(rows []measure.Row) string {
	names := 0
	for _, r := range rows {
		names = max(names, r.KeyNameBytes)
	}
	if names == 0 {
		return ""
	}
	return fmt.Sprintf("memory (B) is MEMORY USAGE of each algorithm's keys at the end of its scenario (key names up to %d B): "+
		"one moment of a few keys, which a burst may leave with fewer blocks or entries than a busy key; "+
		"plan Redis memory with `ratelab capacity`, a key held at its limit (docs/capacity-and-bench.md)", names)
}

// sampleLatency replaces the latency figures of rows (one per job, in the
// order of jobs, each running sched) with those of sched's first
// LatencySample arrivals sent one call at a time, one job after another,
// on keys under prefix (not logged, not in the rows' other figures). Jobs whose limiter is not
// algorithms.Scripted (an HTTP endpoint) went one call at a time already:
// their rows keep their own figures. r's Redis, timeout and error policy
// are used.
func sampleLatency(ctx context.Context, r *harness.Runner, jobs []harness.Job, sched scenarios.Schedule, prefix string, rows []measure.Row) error {
	sched.Arrivals = sched.Arrivals[:min(len(sched.Arrivals), LatencySample)]
	var sample []harness.Job
	var at []int // the row of each sampled job
	for i, j := range jobs {
		if _, ok := j.Limiter.(algorithms.Scripted); !ok {
			continue
		}
		j = j.WithSchedule(sched)
		j.Prefix, j.Sink = prefix+j.Prefix, nil
		sample = append(sample, j)
		at = append(at, i)
	}
	sr := &harness.Runner{Redis: r.Redis, Clock: harness.VirtualClock, Timeout: r.Timeout, OnError: r.OnError, MaxOutage: r.MaxOutage}
	results, err := sr.Execute(ctx, sample)
	if err != nil {
		return fmt.Errorf("latency sample: %w", err)
	}
	for k, jr := range results {
		i := at[k]
		if i >= len(rows) || jr.Latency.TotalCount() == 0 {
			continue
		}
		h := jr.Latency
		rows[i].P50US, rows[i].P99US = h.ValueAtQuantile(50), h.ValueAtQuantile(99)
		rows[i].P999US, rows[i].MaxUS = h.ValueAtQuantile(99.9), h.Max()
	}
	return nil
}
