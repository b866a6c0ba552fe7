package verify

import (
	"iter"

	"github.com/ratelab/ratelab/scenarios"
)

// Streamed trials (scenarios.Trial.Stream) keep their streams through
// what the plan does to a trial's arrivals, so that a pipelined run reads
// the same arrivals from the stream (harness.Job.Arrivals) as from Build.

// clampSeq is seq with every cost at most least (atMost); nil for nil.
func clampSeq(seq iter.Seq[scenarios.Arrival], least int64) iter.Seq[scenarios.Arrival] {
	if seq == nil {
		return nil
	}
	return func(yield func(scenarios.Arrival) bool) {
		for a := range seq {
			a.Cost = min(a.Cost, least)
			if !yield(a) {
				return
			}
		}
	}
}

// aloneSeq is seq's arrivals on scenarios.IsolationKey alone
// (isolationControl); nil for nil.
func aloneSeq(seq iter.Seq[scenarios.Arrival]) iter.Seq[scenarios.Arrival] {
	if seq == nil {
		return nil
	}
	return func(yield func(scenarios.Arrival) bool) {
		for a := range seq {
			if a.Key == scenarios.IsolationKey && !yield(a) {
				return
			}
		}
	}
}
