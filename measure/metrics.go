package measure

import (
	"sort"
	"time"
)

// Event is one decision as the metrics see it: its time on the limiter's
// clock and its cost.
type Event struct {
	// At is the decision time (any common origin).
	At time.Duration
	// Cost is the request's cost units.
	Cost int64
}

// MaxInWindow returns the largest sum of cost over events whose times fit in
// one half-open interval (t-window, t], over all t, and the t (the time of
// the last event counted) where it is reached. events must be sorted by At;
// zero events give 0, 0. O(n) with two pointers.
//
// This is the contract metric max_in_window of DESIGN.md: above the limit,
// the limiter admitted more than the limit within one window length.
func MaxInWindow(events []Event, window time.Duration) (maxSum int64, end time.Duration) {
	var sum int64
	i := 0
	for j, e := range events {
		sum += e.Cost
		for i < j && events[i].At <= e.At-window { // i < j: never past e itself (a zero window, unsorted input)
			sum -= events[i].Cost
			i++
		}
		// equal times after j belong to the same t; count them before comparing
		if j+1 < len(events) && events[j+1].At == e.At {
			continue
		}
		if sum > maxSum {
			maxSum, end = sum, e.At
		}
	}
	return maxSum, end
}

// Ideal returns the cost an exact sliding-window log would accept for the
// offered events (sorted by At; ties in the given order): an event is
// accepted when the accepted cost in (At-window, At] plus its cost is at most
// limit. It is the oracle that fidelity is measured against.
func Ideal(events []Event, limit int64, window time.Duration) int64 {
	var accepted []Event
	var inWindow, total int64
	head := 0
	for _, e := range events {
		for head < len(accepted) && accepted[head].At <= e.At-window {
			inWindow -= accepted[head].Cost
			head++
		}
		if inWindow+e.Cost <= limit {
			accepted = append(accepted, e)
			inWindow += e.Cost
			total += e.Cost
		}
	}
	return total
}

// SortEvents sorts events by At, keeping the order of equal times.
func SortEvents(events []Event) {
	sort.SliceStable(events, func(a, b int) bool { return events[a].At < events[b].At })
}
