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
	l := NewIdealLog(limit, window)
	for _, e := range events {
		l.Offer(e)
	}
	return l.Accepted()
}

// IdealLog is Ideal's exact sliding-window log fed one offer at a time:
// it accepts an event when the accepted cost in (At-window, At] plus its
// cost is at most its limit. It holds the accepted events of the trailing
// window only (at most limit of them, each costing 1 or more), not every
// event offered. Not safe for concurrent use.
type IdealLog struct {
	limit  int64
	window time.Duration
	// acc holds accepted events; acc[head:] are those in the window
	acc             []Event
	head            int
	inWindow, total int64
}

// NewIdealLog returns an empty log of limit cost units per window.
func NewIdealLog(limit int64, window time.Duration) *IdealLog {
	return &IdealLog{limit: limit, window: window}
}

// Offer offers e, no earlier than the event offered before it, and
// reports whether the log accepts it.
func (l *IdealLog) Offer(e Event) bool {
	for l.head < len(l.acc) && l.acc[l.head].At <= e.At-l.window {
		l.inWindow -= l.acc[l.head].Cost
		l.head++
	}
	if l.inWindow+e.Cost > l.limit {
		return false
	}
	if l.head >= 64 && l.head >= len(l.acc)/2 { // drop those that left the window
		l.acc = append(l.acc[:0], l.acc[l.head:]...)
		l.head = 0
	}
	l.acc = append(l.acc, e)
	l.inWindow += e.Cost
	l.total += e.Cost
	return true
}

// Accepted is the cost the log accepted so far.
func (l *IdealLog) Accepted() int64 { return l.total }

// SortEvents sorts events by At, keeping the order of equal times.
func SortEvents(events []Event) {
	sort.SliceStable(events, func(a, b int) bool { return events[a].At < events[b].At })
}
