package scenarios

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// The overload stream is the overload scenario's arrivals, one at a time:
// at limits whose 15L draws fit one sorting range and at limits that need
// several (L = 40,000: 600,000 draws in 3 ranges), and with any seed.
func TestOverloadStreamIsOverload(t *testing.T) {
	for _, p := range []Params{
		{Limit: 1, Window: time.Second, Seed: 1},
		{Limit: 7, Window: 10 * time.Millisecond, Seed: 5},
		{Limit: 1000, Window: time.Hour, Seed: 0},
		{Limit: 40_000, Window: 24 * time.Hour, Seed: 3},
		{Limit: 40_000, Window: 10 * time.Microsecond, Seed: 9}, // a 50 µs span: ~12 arrivals per instant, some on the cuts
	} {
		want := overload(p).Arrivals
		got := slices.Collect(overloadStream(p))
		if !reflect.DeepEqual(got, want) {
			n := 0
			for n < min(len(got), len(want)) && got[n] == want[n] {
				n++
			}
			t.Fatalf("%+v: %d streamed, %d built; they differ first at %d", p, len(got), len(want), n)
		}
	}
}

// A stream read part of the way stops where its reader stops.
func TestStreamStopsEarly(t *testing.T) {
	p := Params{Limit: 40_000, Window: time.Minute, Seed: 2}
	for name, seq := range map[string]func(func(Arrival) bool){"overload": overloadStream(p), "dense": denseSeq(p, denseStep(p, 0))} {
		n := 0
		for range seq {
			n++
			if n == 10 {
				break
			}
		}
		if n != 10 {
			t.Errorf("%s: read %d, want 10", name, n)
		}
	}
}

// Every streamed trial of AdversarialPlan streams exactly what its Build
// makes (the dense stream, overload and weighted overload: costs 1, 2,
// L/4, L/2, L-1, L in turn), and Built drops the stream with Build.
func TestPlanStreamsAreBuilds(t *testing.T) {
	for _, L := range []int64{3, 1000, 20_000} {
		p := Params{Limit: L, Window: time.Hour, Seed: 4}
		streamed := map[string]int{}
		for _, tr := range AdversarialPlan(p, Attack{Cost: true, Keys: true}) {
			if tr.Stream == nil {
				continue
			}
			streamed[tr.Family]++
			if tr.Build == nil {
				t.Fatalf("L=%d %s / %s: a Stream without Build", L, tr.Family, tr.Name)
			}
			got, want := slices.Collect(tr.Each()), tr.Build()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("L=%d %s / %s: the stream (%d) differs from Build (%d)", L, tr.Family, tr.Name, len(got), len(want))
			}
			if tr.Family == "weighted" {
				costs := []int64{1, 2, max(1, L/4), max(1, L/2), L - 1, L}
				for i, a := range got {
					if a.Cost != costs[i%len(costs)] {
						t.Fatalf("L=%d weighted arrival %d costs %d, want %d", L, i, a.Cost, costs[i%len(costs)])
					}
				}
			}
			if b := tr.Built(); b.Stream != nil || b.Build != nil || !reflect.DeepEqual(b.Schedule.Arrivals, want) {
				t.Fatalf("L=%d %s / %s: Built kept its Stream or Build, or changed its arrivals", L, tr.Family, tr.Name)
			}
		}
		if want := map[string]int{"overload": 2, "weighted": 1, DenseFamily: 1}; !reflect.DeepEqual(streamed, want) {
			t.Errorf("L=%d: streamed trials by family %v, want %v", L, streamed, want)
		}
	}
}
