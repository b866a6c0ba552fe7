package measure

import (
	"math/rand/v2"
	"testing"
	"time"
)

// bruteMax is the definition of max_in_window, by brute force: for every
// event time t, the sum over events in (t-W, t].
func bruteMax(events []Event, w time.Duration) int64 {
	var best int64
	for _, right := range events {
		var sum int64
		for _, e := range events {
			if e.At > right.At-w && e.At <= right.At {
				sum += e.Cost
			}
		}
		best = max(best, sum)
	}
	return best
}

func TestMaxInWindowCases(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		events []Event
		window time.Duration
		want   int64
		end    time.Duration
	}{
		{"empty", nil, 10 * ms, 0, 0},
		{"one", []Event{{5 * ms, 3}}, 10 * ms, 3, 5 * ms},
		// exactly W apart: the interval is half-open, so they never share a window
		{"exactly W apart", []Event{{0, 1}, {10 * ms, 1}}, 10 * ms, 1, 0},
		{"just under W apart", []Event{{0, 1}, {10*ms - 1, 1}}, 10 * ms, 2, 10*ms - 1},
		// equal times all count together
		{"same instant", []Event{{ms, 1}, {ms, 1}, {ms, 1}}, 10 * ms, 3, ms},
		{"weighted", []Event{{0, 100}, {5 * ms, 1}, {20 * ms, 50}, {21 * ms, 60}}, 10 * ms, 110, 21 * ms},
		// the seed harness: 50 at -1s, 50 at +1s, W=10s
		{"boundary burst", append(burst(-time.Second, 50), burst(time.Second, 50)...), 10 * time.Second, 100, time.Second + 49*ms},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, end := MaxInWindow(c.events, c.window)
			if got != c.want || end != c.end {
				t.Errorf("MaxInWindow = %d at %v, want %d at %v", got, end, c.want, c.end)
			}
		})
	}
}

func burst(at time.Duration, n int) []Event {
	var out []Event
	for i := 0; i < n; i++ {
		out = append(out, Event{At: at + time.Duration(i)*time.Millisecond, Cost: 1})
	}
	return out
}

func TestMaxInWindowMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 2000; iter++ {
		n := r.IntN(60)
		events := make([]Event, n)
		for i := range events {
			// coarse times so that ties and exact-W distances happen often
			events[i] = Event{At: time.Duration(r.IntN(40)) * time.Millisecond, Cost: 1 + r.Int64N(5)}
		}
		SortEvents(events)
		w := time.Duration(1+r.IntN(15)) * time.Millisecond
		got, _ := MaxInWindow(events, w)
		if want := bruteMax(events, w); got != want {
			t.Fatalf("iter %d: MaxInWindow = %d, brute force = %d (w=%v, events=%v)", iter, got, want, w, events)
		}
	}
}

func TestIdeal(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		events []Event
		limit  int64
		window time.Duration
		want   int64
	}{
		{"under the limit", burst(0, 5), 10, 100 * ms, 5},
		{"burst over the limit", burst(0, 15), 10, 100 * ms, 10},
		// the second burst comes exactly one window after the first started: the first entry has left
		{"second burst after the window", append(burst(0, 10), burst(100*ms, 10)...), 10, 100 * ms, 20},
		{"boundary burst is held to L", append(burst(-time.Second, 50), burst(time.Second, 50)...), 50, 10 * time.Second, 50},
		// a cost that does not fit is skipped, a smaller one later still fits
		{"weighted skip", []Event{{0, 8}, {ms, 5}, {2 * ms, 2}}, 10, time.Second, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Ideal(c.events, c.limit, c.window); got != c.want {
				t.Errorf("Ideal = %d, want %d", got, c.want)
			}
		})
	}
}

// The ideal oracle never exceeds the limit in any window, and accepts every
// event a brute-force greedy log would.
func TestIdealNeverExceedsLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 500; iter++ {
		n, span := r.IntN(80), 50
		if iter%50 == 0 { // long enough for the log to drop what left its window
			n, span = 3000, 2000
		}
		events := make([]Event, n)
		for i := range events {
			events[i] = Event{At: time.Duration(r.IntN(span)) * time.Millisecond, Cost: 1 + r.Int64N(4)}
		}
		SortEvents(events)
		limit := 1 + r.Int64N(12)
		w := time.Duration(1+r.IntN(20)) * time.Millisecond
		var acc []Event
		for _, e := range events {
			var in int64
			for _, a := range acc {
				if a.At > e.At-w {
					in += a.Cost
				}
			}
			if in+e.Cost <= limit {
				acc = append(acc, e)
			}
		}
		var want int64
		for _, a := range acc {
			want += a.Cost
		}
		if got := Ideal(events, limit, w); got != want {
			t.Fatalf("iter %d: Ideal = %d, brute force = %d", iter, got, want)
		}
		if m, _ := MaxInWindow(acc, w); m > limit {
			t.Fatalf("iter %d: ideal accepted %d in one window, limit %d", iter, m, limit)
		}
	}
}
