package harness_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/targets"
)

// Drive decides a stream of arrivals as Execute decides the same schedule:
// the same answers at the same instants, in order, for every registered
// algorithm, pipelined or one call at a time (a client-side limiter is
// never pipelined).
func TestDriveSameAsExecute(t *testing.T) {
	l := limit.Limit{Count: 20, Window: time.Second}
	sc, err := scenarios.Get("overload")
	if err != nil {
		t.Fatal(err)
	}
	sched := sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window, Seed: 5})
	for i := range sched.Arrivals {
		sched.Arrivals[i].Client = 0 // one client: Execute sends one call at a time too
	}
	for _, name := range targets.KnownAlgorithms() {
		for _, depth := range []int{0, 16} {
			t.Run(fmt.Sprintf("%s/pipeline %d", name, depth), func(t *testing.T) {
				lim, err := targets.NewAlgorithm(name, srv.Client(), l)
				if err != nil {
					t.Fatal(err)
				}
				prefix := fmt.Sprintf("%s:%s:%d:", srv.Key(t), name, depth)
				r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: depth}
				jrs, outs, err := execute(r, harness.Job{Limiter: lim, Limit: l, Prefix: prefix + "execute:"}.WithSchedule(sched))
				if err != nil {
					t.Fatal(err)
				}
				sink := &sinkRecorder{}
				job := harness.Job{Limiter: lim, Limit: l, Scenario: sched.Scenario, Prefix: prefix + "drive:",
					Arrivals: slices.Values(sched.Arrivals), Sink: sink}
				d := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: depth}
				jr, err := d.Drive(ctx, job)
				if err != nil {
					t.Fatal(err)
				}
				got := sink.got
				if !jr.Anchor.Equal(jrs[0].Anchor) || len(sink.anchors) != 1 || !sink.anchors[0].Equal(jr.Anchor) || sink.ends != 1 {
					t.Errorf("anchor %s, want %s; the sink was told anchors %v, ended %d times (want the anchor, once)", jr.Anchor, jrs[0].Anchor, sink.anchors, sink.ends)
				}
				if n := jr.Latency.TotalCount(); n != int64(len(sched.Arrivals)) {
					t.Errorf("%d latencies, want %d", n, len(sched.Arrivals))
				}
				want := outs[0]
				if len(got) != len(want) {
					t.Fatalf("%d outcomes, want %d", len(got), len(want))
				}
				for i, o := range got {
					w := want[i]
					if o.Err != nil || o.Seq != i || o.Decision.Allowed != w.Decision.Allowed || !o.Decision.DecidedAt.Equal(w.Decision.DecidedAt) {
						t.Fatalf("outcome %d: seq %d allowed %v at %s (%v), want seq %d allowed %v at %s",
							i, o.Seq, o.Decision.Allowed, o.Decision.DecidedAt, o.Err, i, w.Decision.Allowed, w.Decision.DecidedAt)
					}
				}
			})
		}
	}
}

// A sink's error stops Drive at once, pipelined or not: no outcome is told
// after it (not even those of the same round trip), no arrival is read
// past the round trip under way, and Drive returns it.
func TestDriveSinkStops(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Second}
	lim, err := algorithms.New("fixed-window", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	for _, depth := range []int{0, 4} {
		read, told := 0, 0
		arrivals := func(yield func(scenarios.Arrival) bool) {
			for i := 0; i < 1000; i++ {
				read++
				if !yield(scenarios.Arrival{At: time.Duration(i) * time.Millisecond, Key: "k", Cost: 1}) {
					return
				}
			}
		}
		r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: depth}
		job := harness.Job{Limiter: lim, Limit: l, Scenario: "stop", Prefix: fmt.Sprintf("%s:%d:", srv.Key(t), depth), Arrivals: arrivals,
			Sink: harness.SinkFunc(func(o harness.Outcome) error {
				told++
				if o.Seq == 5 {
					return stop
				}
				return nil
			})}
		_, err := r.Drive(ctx, job)
		if !errors.Is(err, stop) {
			t.Errorf("pipeline %d: %v, want the sink's error", depth, err)
		}
		if told != 6 || read > 6+max(depth, 1) {
			t.Errorf("pipeline %d: %d outcomes told (want 6), %d arrivals read (want at most %d)", depth, told, read, 6+max(depth, 1))
		}
	}
}

// In real time Drive sends each arrival when it is due on the run's clock,
// never before, in order, from an anchor on a window boundary (the one told
// to Anchored), and the limiter decides on that clock: fixed-window takes
// the first L of ten arrivals within one window.
func TestDriveRealTime(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Second}
	lim, err := algorithms.New("fixed-window", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	var arr []scenarios.Arrival
	for i := range 10 {
		arr = append(arr, scenarios.Arrival{At: time.Duration(10*(i+1)) * time.Millisecond, Key: "k", Cost: 1})
	}
	for _, clock := range []harness.ClockMode{harness.ClientClock, harness.RedisClock} {
		t.Run(string(clock), func(t *testing.T) {
			var anchored time.Time
			var offset time.Duration
			r := &harness.Runner{Redis: srv.Client(), Clock: clock, Lead: 50 * time.Millisecond,
				Anchored: func(a time.Time, off time.Duration) { anchored, offset = a, off }}
			var got harness.Collector
			job := harness.Job{Limiter: lim, Limit: l, Scenario: "real", Prefix: srv.Key(t) + ":", Arrivals: slices.Values(arr), Sink: &got}
			jr, err := r.Drive(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			if anchored.IsZero() || !jr.Anchor.Equal(anchored) || !harness.AlignUp(anchored, l.Window).Equal(anchored) {
				t.Fatalf("anchor %s, told %s: want one anchor on a window boundary", jr.Anchor, anchored)
			}
			if len(got.Outcomes) != len(arr) {
				t.Fatalf("%d outcomes, want %d", len(got.Outcomes), len(arr))
			}
			for i, o := range got.Outcomes {
				due := anchored.Add(arr[i].At).Add(-offset)
				if o.Seq != i || o.Err != nil || o.Sent.Before(due) || o.Decision.Allowed != (i < int(l.Count)) {
					t.Errorf("outcome %d: seq %d sent %s before due by %s, allowed %v (%v); want allowed %v, not early",
						i, o.Seq, o.Sent.Format("15:04:05.000"), due.Sub(o.Sent), o.Decision.Allowed, o.Err, i < int(l.Count))
				}
			}
		})
	}
}

// An unknown clock is an error, before any call.
func TestDriveUnknownClock(t *testing.T) {
	lim, err := algorithms.New("fixed-window", srv.Client(), limit.Limit{Count: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &harness.Runner{Redis: srv.Client(), Clock: "sundial"}
	_, err = r.Drive(ctx, harness.Job{Limiter: lim, Arrivals: slices.Values([]scenarios.Arrival{{Key: "k", Cost: 1}}),
		Sink: harness.SinkFunc(func(harness.Outcome) error { t.Fatal("an outcome"); return nil })})
	if err == nil || !strings.Contains(err.Error(), "sundial") {
		t.Errorf("%v, want an error naming the clock", err)
	}
}
