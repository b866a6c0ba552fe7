package capacity_test

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/capacity"
	"github.com/ratelab/ratelab/limit"
)

// No configuration makes Validate or the plan builder panic, and every configuration Validate accepts has plans that fill each
// key to its limit, in order, within the budget: its first window to the limit, and a window counter's next window (one per
// Redis key) to no more than it.
func FuzzCapacityConfig(f *testing.F) {
	f.Add(int64(10), 10000, int64(100_000), int64(time.Hour), int64(0), uint8(0))
	f.Add(int64(1e18), 10000, int64(100_000), int64(time.Hour), int64(0), uint8(1))
	f.Add(int64(1<<63-1), 1<<62, int64(1<<63-1), int64(1<<63-1), int64(1), uint8(2))
	f.Add(int64(100000), 1, int64(10_000_000), int64(8760*time.Hour), int64(time.Hour), uint8(2))
	f.Add(int64(3), 5, int64(1), int64(time.Minute), int64(7*time.Second), uint8(2))
	f.Add(int64(-1), -1, int64(-1), int64(-1), int64(-1), uint8(5))
	f.Fuzz(func(t *testing.T, count int64, keys int, budget, window, precision int64, alg uint8) {
		names := algorithms.Names()
		name := names[int(alg)%len(names)]
		l := limit.Limit{Count: count, Window: time.Duration(window), Precision: time.Duration(precision)}
		if n := capacity.PlanCalls(name, l); n <= capacity.MaxBudget {
			if plan := capacity.FillPlan(name, l); int64(len(plan)) != n {
				t.Fatalf("FillPlan(%s, %+v) has %d calls, PlanCalls %d", name, l, len(plan), n)
			}
		}
		cfg := capacity.Config{Algorithms: []string{name}, Limits: []limit.Limit{l}, Keys: keys, ActiveKeys: 1,
			Budget: budget}
		if cfg.Validate() != nil {
			return
		}
		if name != "bucketed-hash" {
			l.Precision = 0
		}
		plan := capacity.FillPlan(name, l)
		n := capacity.KeysFor(keys, int64(len(plan)), budget)
		if len(plan) == 0 || int64(n)*int64(len(plan)) > budget {
			t.Fatalf("%s %+v keys %d budget %d: %d calls x %d keys", name, l, keys, budget, len(plan), n)
		}
		// the first window is filled to the limit; a window counter's plan
		// goes on into the next window (one per Redis key), never past the limit there
		perWindow := map[time.Duration]int64{}
		for i, c := range plan {
			perWindow[c.Offset/l.Window] += c.Cost
			if c.Cost < 1 || c.Offset < 0 || c.Offset >= time.Duration(capacity.RedisKeys(name, l))*l.Window || (i > 0 && c.Offset <= plan[i-1].Offset) {
				t.Fatalf("%s %+v: call %d %+v out of order or range", name, l, i, c)
			}
		}
		for w, units := range perWindow {
			if (w == 0 && units != count) || units > count {
				t.Fatalf("%s %+v: plan fills %d units in window %d, want %d", name, l, units, w, count)
			}
		}
	})
}
