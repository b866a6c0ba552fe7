package scenarios

import (
	"iter"
	"slices"
	"time"
)

// Streamed trials.
//
// The largest trials of AdversarialPlan (the dense stream, 20L arrivals;
// sustained overload and its weighted variant, 15L each) also make their
// arrivals as a stream (Trial.Stream): the same arrivals as their Build,
// in the same order, made as they are read, so that a runner sending them
// in order holds a round trip's worth instead of millions (at L = 10^5 one
// of them is 60-80 MB as a slice).

// Each returns t's arrivals in order as a sequence: Stream when it is set
// (made as they are read), else those of Arrivals, made (Build) when the
// sequence is ranged over, anew for each range, and dropped after it.
func (t Trial) Each() iter.Seq[Arrival] {
	if t.Stream != nil {
		return t.Stream
	}
	if t.Build == nil {
		return slices.Values(t.Schedule.Arrivals)
	}
	return func(yield func(Arrival) bool) {
		for _, a := range t.Build() {
			if !yield(a) {
				return
			}
		}
	}
}

// overloadChunk is about how many arrival times overloadTimes sorts at
// once: 2 MB of them.
const overloadChunk = 1 << 18

// overloadTimes yields, in ascending order, the times of the overload
// scenario's arrivals for p (Limit and Window set): the 15L draws of
// overload's generator over [0, 5W), sorted, without holding them all.
// The span is cut into ranges of about overloadChunk draws each; for each
// range the generator is run again from the seed and the draws falling in
// it are kept and sorted. So the times are overload's exactly (arrivals at
// one instant are alike, so their order does not matter), for
// ceil(15L/overloadChunk) runs of the generator.
func overloadTimes(p Params) iter.Seq[time.Duration] {
	return func(yield func(time.Duration) bool) {
		n := 15 * p.Limit
		span := int64(5 * p.Window)
		ranges := max((n+overloadChunk-1)/overloadChunk, 1)
		ranges = min(ranges, span) // a range is at least 1 ns
		buf := make([]int64, 0, min(n, 2*overloadChunk))
		for k := range ranges {
			// [lo, hi): hi - lo is span/ranges, give or take 1 ns
			lo, hi := cut(span, ranges, k), cut(span, ranges, k+1)
			buf = buf[:0]
			rng := newRand(p.Seed)
			for range n {
				if v := rng.Int64N(span); v >= lo && v < hi {
					buf = append(buf, v)
				}
			}
			slices.Sort(buf)
			for _, v := range buf {
				if !yield(time.Duration(v)) {
					return
				}
			}
		}
	}
}

// cut is the k-th of ranges cuts of [0, span): span*k/ranges without
// overflow.
func cut(span, ranges, k int64) int64 {
	q, r := span/ranges, span%ranges
	return q*k + r*k/ranges
}

// overloadStream is the overload scenario's arrivals for p (Limit and
// Window set) as a stream: overload(p).Arrivals, one at a time.
func overloadStream(p Params) iter.Seq[Arrival] {
	return func(yield func(Arrival) bool) {
		for at := range overloadTimes(p) {
			if !yield(Arrival{At: at, Key: UserKey, Cost: 1}) {
				return
			}
		}
	}
}

// denseSeq is DenseStream(p, step) as a stream (p with its defaults,
// step as denseStep made it).
func denseSeq(p Params, step time.Duration) iter.Seq[Arrival] {
	return func(yield func(Arrival) bool) {
		n := int64(ceilDiv(DenseWindows*p.Window, step))
		offset := time.Duration(newRand(p.Seed).Int64N(int64(step/time.Microsecond))) * time.Microsecond
		for k := range n {
			if !yield(Arrival{At: -p.Window + offset + time.Duration(k)*step, Key: UserKey, Cost: 1}) {
				return
			}
		}
	}
}

// addStream adds a trial of n arrivals, seq's, already sorted by At,
// keyed UserKey when they name no key and their costs at most the limit:
// its Stream makes them as they are read, its Build collects them.
func (b *trialBuilder) addStream(family, name string, j Judge, n int64, seq iter.Seq[Arrival]) *Trial {
	p := b.p
	stream := func(yield func(Arrival) bool) {
		for a := range seq {
			if a.Key == "" {
				a.Key = UserKey
			}
			a.Cost = min(a.Cost, p.Limit)
			if !yield(a) {
				return
			}
		}
	}
	build := func() []Arrival {
		arr := make([]Arrival, 0, n) // exactly: a trial holds millions
		for a := range stream {
			arr = append(arr, a)
		}
		return finish(family, p, arr).Arrivals
	}
	b.trials = append(b.trials, Trial{Family: family, Name: name, Schedule: Schedule{Scenario: family, Params: p}, Judge: j,
		Build: build, Stream: stream})
	return &b.trials[len(b.trials)-1]
}
