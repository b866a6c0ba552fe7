package capacity_test

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/capacity"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// allocSlack is what the allocator's rounding of a key's name may add or
// take per Redis key beyond the difference of two names' lengths (jemalloc
// size classes 16 B apart at these lengths).
const allocSlack = 16

// run and capacity agree on the bytes per key of every algorithm at one
// limit, 50 per minute (the shortest window capacity takes). run's boundary-burst ends just after a boundary with
// each key in the state capacity fills (a busy key's): two live counters
// for the window counters, a theoretical arrival time with a fraction for
// gcra, a full window for sliding-log. What is left to differ is explained:
// run's key names are longer (they name the algorithm and the scenario),
// and a burst touches fewer of bucketed-hash's blocks than capacity fills
// (run's is then at most capacity's). Beyond that, 5 %. (At 50 per hour
// boundary-burst's round arrival times leave gcra's arrival time whole,
// stored as an integer, 32 B less, which a clock's microseconds rarely do.)
func TestRunAndCapacityAgree(t *testing.T) {
	lim := limit.Limit{Count: 50, Window: time.Minute}
	rr, err := run.Run(ctx, srv.Redis, run.Config{Scenarios: []string{"boundary-burst"}, Limit: lim,
		Set: run.Given{Count: true, Window: true}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := capacity.Run(ctx, srv.Redis, capacity.Config{Limits: capacity.Limits([]int64{50}, time.Minute, 0), Keys: 100, Budget: 20_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	caps := map[string]measure.CapacityRow{}
	for _, c := range cr.Results {
		caps[c.Algorithm] = c
	}
	t.Logf("| algorithm | capacity: MU B/key (Redis keys, name B) | used_memory Δ B/key | run boundary-burst: MU B (Redis keys, name B) | run - capacity - names, B |")
	t.Logf("|---|--:|--:|--:|--:|")
	for _, r := range rr.Results {
		c, ok := caps[r.Algorithm]
		if !ok || r.Limit != 50 || r.WindowMS != time.Minute.Milliseconds() {
			t.Fatalf("%s: run at %d per %d ms, capacity row %v", r.Algorithm, r.Limit, r.WindowMS, ok)
		}
		delete(caps, r.Algorithm)
		if float64(r.Keys) != c.RedisKeys {
			t.Errorf("%s: run left %d Redis keys, capacity fills %.0f per key", r.Algorithm, r.Keys, c.RedisKeys)
		}
		names := r.Keys * int64(r.KeyNameBytes-c.KeyNameBytes) // run's longer names
		rest := r.MemoryBytes - c.MemoryBytes - names
		tol := int64(0.05*float64(c.MemoryBytes)) + allocSlack*r.Keys
		t.Logf("| %s | %d (%.0f, %d) | %.0f | %d (%d, %d) | %+d |", r.Algorithm, c.MemoryBytes, c.RedisKeys, c.KeyNameBytes,
			c.UsedMemoryDeltaBytes, r.MemoryBytes, r.Keys, r.KeyNameBytes, rest)
		if r.Algorithm == "bucketed-hash" {
			if rest > tol {
				t.Errorf("%s: run %d B (names %d B) above capacity's %d B (names %d B): a burst fills fewer blocks, never more",
					r.Algorithm, r.MemoryBytes, r.KeyNameBytes, c.MemoryBytes, c.KeyNameBytes)
			}
			continue
		}
		if rest > tol || rest < -tol {
			t.Errorf("%s: run %d B in %d keys (names %d B), capacity %d B in %.0f (names %d B): %+d B beyond the names' %+d, more than %d",
				r.Algorithm, r.MemoryBytes, r.Keys, r.KeyNameBytes, c.MemoryBytes, c.RedisKeys, c.KeyNameBytes, rest, names, tol)
		}
	}
	if len(caps) != 0 || len(rr.Results) != len(algorithms.Names()) {
		t.Errorf("algorithms without a counterpart: %v; run rows %d", caps, len(rr.Results))
	}
}
