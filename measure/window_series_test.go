package measure

import (
	"testing"
	"time"
)

func TestWindowSeries(t *testing.T) {
	ms := time.Millisecond
	ev := func(at ...int) []Event {
		var out []Event
		for _, a := range at {
			out = append(out, Event{At: time.Duration(a) * ms, Cost: 1})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   []WindowPoint
	}{
		// one event enters at its time and leaves W later (t-W excluded)
		{"one", ev(5), []WindowPoint{{5, 1}, {15, 0}}},
		// two at one instant are one step of 2
		{"same instant", ev(0, 0), []WindowPoint{{0, 2}, {10, 0}}},
		// a burst each side of a boundary: 2 in the window from 9 to 10
		{"burst", ev(-1, 0, 9, 12), []WindowPoint{{-1, 1}, {0, 2}, {9, 2}, {10, 1}, {12, 2}, {19, 1}, {22, 0}}},
	} {
		got := WindowSeries(tc.events, 10*ms, 0, 0)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: point %d: got %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

// The series' peak is MaxInWindow's, also when it is thinned.
func TestWindowSeriesPeakMatchesMaxInWindow(t *testing.T) {
	var ev []Event
	for i := 0; i < 5000; i++ {
		ev = append(ev, Event{At: time.Duration(i*i%7919) * time.Millisecond, Cost: int64(1 + i%3)})
	}
	SortEvents(ev)
	want, _ := MaxInWindow(ev, time.Second)
	for _, n := range []int{0, 800, 10} {
		pts := WindowSeries(ev, time.Second, 0, n)
		var peak int64
		for _, p := range pts {
			peak = max(peak, p.Accepted)
		}
		if peak != want {
			t.Errorf("maxPoints %d: peak %d, want MaxInWindow %d", n, peak, want)
		}
		if n > 0 && len(pts) > n {
			t.Errorf("maxPoints %d: %d points", n, len(pts))
		}
		if last := pts[len(pts)-1]; last.Accepted != 0 {
			t.Errorf("maxPoints %d: series ends at %v, want 0 (every event has left)", n, last)
		}
	}
}

// SplitWindow tells the worst window apart at the one aligned boundary
// inside it: a boundary burst's 50 before and 50 after, a window that
// ends on a boundary (which is then inside it, its last instant), and the
// zero split for a zero window.
func TestSplitWindow(t *testing.T) {
	const w = 10 * time.Second
	var burst []Event
	for i := range 100 {
		at := -time.Second + time.Duration(i%50)*time.Millisecond
		if i >= 50 {
			at += 2 * time.Second
		}
		burst = append(burst, Event{At: at, Cost: 1})
	}
	_, end := MaxInWindow(burst, w)
	s := SplitWindow(burst, w, end)
	if s.BoundaryMS != 0 || s.Before.Accepted != 50 || s.After.Accepted != 50 || s.Before.FirstMS != -1000 || s.After.LastMS != 1049 {
		t.Errorf("boundary burst: %+v", s)
	}
	onBoundary := SplitWindow([]Event{{At: 5 * time.Second, Cost: 2}, {At: w, Cost: 3}}, w, w)
	if onBoundary.BoundaryMS != 10000 || onBoundary.Before.Accepted != 2 || onBoundary.After.Accepted != 3 {
		t.Errorf("a window ending on a boundary: %+v", onBoundary)
	}
	if z := SplitWindow(burst, 0, end); z != (WindowSplit{}) {
		t.Errorf("zero window: %+v", z)
	}
}
