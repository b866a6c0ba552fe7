package harness_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// burstAt is n cost-1 arrivals on UserKey from start, step apart.
func burstAt(start time.Duration, n int, step time.Duration) []scenarios.Arrival {
	out := make([]scenarios.Arrival, n)
	for i := range out {
		out[i] = scenarios.Arrival{At: start + time.Duration(i)*step, Key: scenarios.UserKey, Cost: 1}
	}
	return out
}

// Thinning sends a mostly denied burst as ThinAfter denials and probes,
// always its last arrival; the outcomes are those of the arrivals sent
// (their Seq index the schedule) and JobResult.Skipped counts the rest; a limiter that accepts again mid-burst is sent
// every arrival from the first accepted probe on, so at most a stride
// (L/64) of what the whole burst would have had accepted is lost. Runs
// without Thin, or not pipelined, send everything.
func TestThinBursts(t *testing.T) {
	const L = 2000
	w := time.Hour
	us := time.Microsecond
	l := limit.Limit{Count: L, Window: w}
	// the second burst in the first one's window: all denied
	denied := append(burstAt(-w/2, L, us), burstAt(0, L, us)...)
	// the second burst straddles an epoch-aligned boundary: its first half
	// is denied by a fixed window, its second half accepted
	straddle := append(burstAt(-w/2, L, us), burstAt(-L/2*us, L, us)...)
	cases := []struct {
		name     string
		alg      string
		arr      []scenarios.Arrival
		thin     bool
		pipeline int
		maxSent  int   // sent at most (0: all of them)
		accepted int64 // at least
		maxInW   int64 // max in a window, at least
	}{
		// sliding log: L accepted, then 256 denials and ~70 probes
		{"denied burst thinned", "sliding-log", denied, true, 256, L + harness.ThinAfter + 80, L, L},
		{"denied burst whole without Thin", "sliding-log", denied, false, 256, 0, L, L},
		{"not pipelined: Thin ignored", "sliding-log", denied, true, 0, 0, L, L},
		// a fixed window accepts again at the boundary: a probe at most L/64
		// after it finds it, and every arrival after that probe is sent
		{"fixed window reopens mid-burst", "fixed-window", straddle, true, 256, L + L/2 + harness.ThinAfter + 40, L + L/2 - L/64, L + L/2 - L/64},
		{"fixed window whole", "fixed-window", straddle, false, 256, 0, L + L/2, L + L/2},
	}
	for k, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim, err := algorithms.New(c.alg, srv.Client(), l)
			if err != nil {
				t.Fatal(err)
			}
			sched := scenarios.Schedule{Scenario: "thin", Params: scenarios.Params{Limit: L, Window: w}, Arrivals: c.arr}
			r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: c.pipeline}
			jrs, outs, err := execute(r, harness.Job{Limiter: lim, Limit: l, Thin: c.thin,
				Prefix: fmt.Sprintf("%s:%d:", srv.Key(t), k)}.WithSchedule(sched))
			if err != nil {
				t.Fatal(err)
			}
			jr := jrs[0]
			sent := make([]scenarios.Arrival, 0, len(outs[0]))
			var acc int64
			var events []measure.Event
			last := -1 // the outcomes' Seq index the schedule, rising: the sent arrivals are a subsequence
			for i, o := range outs[0] {
				if o.Err != nil {
					t.Fatalf("outcome %d: %v", i, o.Err)
				}
				if o.Seq <= last || o.Seq >= len(c.arr) || o.Arrival != c.arr[o.Seq] {
					t.Fatalf("outcome %d: Seq %d, arrival %+v: not the schedule's arrival after Seq %d", i, o.Seq, o.Arrival, last)
				}
				last = o.Seq
				sent = append(sent, o.Arrival)
				if o.Decision.Allowed {
					acc++
					events = append(events, measure.Event{At: o.Arrival.At, Cost: 1})
				}
			}
			if got := int64(len(c.arr) - len(sent)); jr.Skipped != got {
				t.Errorf("Skipped %d, want %d (of %d, %d sent)", jr.Skipped, got, len(c.arr), len(sent))
			}
			if sent[len(sent)-1] != c.arr[len(c.arr)-1] {
				t.Errorf("the last arrival %+v was not sent", c.arr[len(c.arr)-1])
			}
			maxW, _ := measure.MaxInWindow(events, w)
			switch {
			case c.maxSent == 0 && len(sent) != len(c.arr):
				t.Errorf("sent %d of %d, want all", len(sent), len(c.arr))
			case c.maxSent > 0 && len(sent) > c.maxSent:
				t.Errorf("sent %d of %d, want at most %d", len(sent), len(c.arr), c.maxSent)
			case acc < c.accepted || maxW < c.maxInW:
				t.Errorf("accepted %d, max in a window %d; want at least %d and %d", acc, maxW, c.accepted, c.maxInW)
			}
			t.Logf("sent %d of %d, accepted %d, max in a window %d", len(sent), len(c.arr), acc, maxW)
		})
	}
}

// clientsAt is n cost-1 arrivals on UserKey at one instant, from clients
// taking turns in runs of n/clients (as the concurrent family sends them).
func clientsAt(at time.Duration, n, clients int) []scenarios.Arrival {
	out := make([]scenarios.Arrival, 0, n)
	for c := range clients {
		for range n / clients {
			out = append(out, scenarios.Arrival{At: at, Key: scenarios.UserKey, Cost: 1, Client: c})
		}
	}
	return out
}

// A burst from several clients whose clocks agree is one burst (the
// limiter sees the same calls whoever sends them): thinned as one client's.
// Clients whose clocks are skewed apart break it where the client changes,
// so each client's run is judged on its own.
func TestThinBurstsAcrossClients(t *testing.T) {
	const L, clients = 2000, 8
	w := time.Hour
	l := limit.Limit{Count: L, Window: w}
	arr := append(clientsAt(-w/2, 2*L, clients), clientsAt(0, 2*L, clients)...)
	for k, c := range []struct {
		name    string
		skew    []time.Duration
		maxSent int // 0: all
	}{
		{"no skew: one burst per instant", nil, L + 2*harness.ThinAfter + 200}, // probes: ~60 + ~125
		{"skewed clocks: each client's run alone", []time.Duration{0, time.Microsecond}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			lim, err := algorithms.New("sliding-log", srv.Client(), l)
			if err != nil {
				t.Fatal(err)
			}
			sched := scenarios.Schedule{Scenario: "thin", Params: scenarios.Params{Limit: L, Window: w}, Arrivals: arr}
			r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: 256}
			jrs, outs, err := execute(r, harness.Job{Limiter: lim, Limit: l, Thin: true, Skew: c.skew,
				Prefix: fmt.Sprintf("%s:clients:%d:", srv.Key(t), k)}.WithSchedule(sched))
			if err != nil {
				t.Fatal(err)
			}
			jr := jrs[0]
			var acc int64
			for i, o := range outs[0] {
				if o.Err != nil {
					t.Fatalf("outcome %d: %v", i, o.Err)
				}
				if o.Decision.Allowed {
					acc++
				}
			}
			sent := len(outs[0])
			switch {
			case acc != L:
				t.Errorf("accepted %d, want %d", acc, L)
			case c.maxSent == 0 && sent != len(arr):
				t.Errorf("sent %d of %d, want all (runs of %d per client are shorter than 2*ThinAfter)", sent, len(arr), 2*L/clients)
			case c.maxSent > 0 && sent > c.maxSent:
				t.Errorf("sent %d of %d, want at most %d", sent, len(arr), c.maxSent)
			}
			if int64(len(arr)-sent) != jr.Skipped {
				t.Errorf("Skipped %d, want %d", jr.Skipped, len(arr)-sent)
			}
			t.Logf("sent %d of %d, accepted %d", sent, len(arr), acc)
		})
	}
}
