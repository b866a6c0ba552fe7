package capacity

import (
	"time"

	"github.com/ratelab/ratelab/limit"
)

// FillCall is one decision of a fill plan: Cost units at Offset after the
// plan's start (a window boundary).
type FillCall struct {
	Offset time.Duration
	Cost   int64
}

// FillPlan returns the decisions that bring one key of algorithm alg to
// the state a key held at its limit l is in most of its life, as offsets
// from a start aligned to the window, in time order:
//   - sliding-log and any algorithm without a shortcut: l.Limit decisions of
//     cost 1 spread evenly over one window (one sorted-set member each, as
//     l.Limit single requests would leave);
//   - bucketed-hash: one decision per block of the precision, carrying that
//     block's share of the units (the hash ends as with cost-1 decisions
//     spread over the window); blocks that would get no unit are left out;
//   - fixed-window: a decision of cost l.Limit at the start of a window and
//     one at the start of the next: a busy key's counter outlives its window
//     by up to a window (its TTL), so two counters are live nearly always;
//   - sliding-counter: a decision of cost l.Limit at the start of a window
//     and one of cost l.Limit/2 halfway through the next (the most the
//     previous window's weight lets in there): it reads the previous
//     window's counter by design, so a busy key holds two (one at a limit
//     of 1, where the previous window's unit keeps the next one closed);
//   - reservoir: one decision of cost l.Limit;
//   - gcra: one decision of cost l.Limit a microsecond into the window: its
//     theoretical arrival time, in seconds, then has a fraction, as Redis
//     TIME's microseconds leave it in use, and is stored as a string (a
//     whole number of seconds would be stored as an integer, 48 B less).
//
// It returns nil when l cannot be filled (Limit < 1, Window < 1 ns, a
// negative precision or one below 1 ns) or when the plan would have more
// than MaxBudget calls; Config.Validate refuses such configurations first.
// len(FillPlan(alg, l)) == PlanCalls(alg, l) otherwise.
func FillPlan(alg string, l limit.Limit) []FillCall {
	n := PlanCalls(alg, l)
	if n < 1 || n > MaxBudget {
		return nil
	}
	plan := make([]FillCall, 0, n)
	switch alg {
	case "reservoir":
		return append(plan, FillCall{0, l.Count})
	case "gcra":
		return append(plan, FillCall{time.Microsecond, l.Count})
	case "fixed-window":
		return append(plan, FillCall{0, l.Count}, FillCall{l.Window, l.Count})
	case "sliding-counter":
		plan = append(plan, FillCall{0, l.Count})
		if l.Count >= 2 {
			// at elapsed e the previous window weighs L(W-e)/W: L/2 units
			// fit from e = W/2 on (rounded up to the script's microsecond)
			half := (l.Window/2 + time.Microsecond - 1).Truncate(time.Microsecond)
			plan = append(plan, FillCall{l.Window + half, l.Count / 2})
		}
		return plan
	case "bucketed-hash":
		p := precision(l)
		blocks := blockCount(l)
		if l.Count >= blocks {
			// every block gets floor((b+1)L/B) - floor(bL/B) >= 1 units
			q, r := l.Count/blocks, l.Count%blocks
			upTo := func(b int64) int64 { return b*q + b*r/blocks } // floor(bL/B) without overflow
			for b := int64(0); b < blocks; b++ {
				plan = append(plan, FillCall{time.Duration(b) * p, upTo(b+1) - upTo(b)})
			}
			return plan
		}
		// fewer units than blocks: unit k (1..L) lands in block ceil(kB/L) - 1
		q, r := blocks/l.Count, blocks%l.Count
		for k := int64(1); k <= l.Count; k++ {
			b := k*q + (k*r+l.Count-1)/l.Count - 1
			plan = append(plan, FillCall{time.Duration(b) * p, 1})
		}
		return plan
	}
	step := l.Window / time.Duration(l.Count)
	for i := range n {
		plan = append(plan, FillCall{time.Duration(i) * step, 1})
	}
	return plan
}

// PlanCalls is the number of decisions FillPlan(alg, l) holds, computed
// without building it: 1 for reservoir and gcra, 2 for the window counters
// (1 for sliding-counter at a limit of 1), min(blocks, Limit) for
// bucketed-hash, Limit for sliding-log. 0 when l cannot be filled.
func PlanCalls(alg string, l limit.Limit) int64 {
	if l.Count < 1 || l.Window < 1 {
		return 0
	}
	switch alg {
	case "reservoir", "gcra":
		return 1
	case "fixed-window":
		return 2
	case "sliding-counter":
		return min(l.Count, 2)
	case "bucketed-hash":
		if precision(l) < 1 {
			return 0
		}
		return min(blockCount(l), l.Count)
	}
	return l.Count
}

// RedisKeys is the number of Redis keys FillPlan(alg, l) leaves per key of
// a built-in algorithm: the window counters' two (see FillPlan), else 1.
func RedisKeys(alg string, l limit.Limit) int {
	switch alg {
	case "fixed-window", "sliding-counter":
		return int(PlanCalls(alg, l))
	}
	return 1
}

// fillSteps is what filling one key of alg at l costs against the budget:
// its calls, and for bucketed-hash at least one per block of the window
// (the script steps through every block it drops between two calls).
func fillSteps(alg string, l limit.Limit) int64 {
	n := PlanCalls(alg, l)
	if alg == "bucketed-hash" && n > 0 {
		n = max(n, blockCount(l))
	}
	return n
}

// KeysFor is the number of keys capacity fills for one algorithm x limit:
// wanted, scaled down so that keys x callsPerKey <= budget, but at least
// MinKeys (and never more than wanted).
func KeysFor(wanted int, callsPerKey, budget int64) int {
	n := int64(wanted)
	if callsPerKey > 0 && n > budget/callsPerKey {
		n = max(budget/callsPerKey, MinKeys)
	}
	return int(min(n, int64(wanted)))
}

// precision is bucketed-hash's block length: l.Precision, or Window/10.
func precision(l limit.Limit) time.Duration {
	if l.Precision == 0 {
		return l.Window / 10
	}
	return l.Precision
}

// blockCount is ceil(Window / precision), for Window >= 1 and precision >= 1.
func blockCount(l limit.Limit) int64 {
	return int64((l.Window-1)/precision(l)) + 1
}
