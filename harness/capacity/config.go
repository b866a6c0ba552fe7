package capacity

import (
	"slices"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// Defaults (contract: `ratelab capacity` documents them).
const (
	// DefaultKeys is N, the keys filled per algorithm and limit to measure
	// the used_memory delta per key.
	DefaultKeys = 10000
	// DefaultActiveKeys is M, the number of active keys the projection is for.
	DefaultActiveKeys = 1_000_000
	// DefaultWindow is the window of the limits capacity fills: long enough
	// that no key expires (TTL = window) while it is measured.
	DefaultWindow = time.Hour
	// DefaultBudget caps the script calls one algorithm x limit may make to
	// fill its keys: N is scaled down (to at least MinKeys) so that keys x
	// calls per key stays within it. 100,000 calls take about 1-2 s
	// (sliding-log's script takes ~12 µs of server time per call) and hold
	// at most ~15 MB.
	DefaultBudget = 100_000
	// MinKeys is the fewest keys a used_memory delta is measured over.
	MinKeys = 10
)

// Bounds that Validate enforces, so that no size reaches an allocation or
// an arithmetic overflow.
const (
	// MaxBudget is the largest Budget: 10^7 script calls, about 2-3 minutes
	// of fill and, for sliding-log, about 1 GB of sorted-set entries.
	MaxBudget = 10_000_000
	// MaxKeys is the largest Keys: more keys than MaxBudget calls could
	// never be filled.
	MaxKeys = MaxBudget
	// MaxActiveKeys is the largest ActiveKeys, 10^12: the projection stays
	// far inside an int64 of bytes.
	MaxActiveKeys = 1_000_000_000_000
	// MaxLimit is the largest limit, 2^53: the scripts do their arithmetic
	// in Lua numbers (doubles), exact up to 2^53.
	MaxLimit = 1 << 53
	// MinWindow and MaxWindow bound Window: keys must not expire while
	// they are measured, and a window of a year is the longest a quota is
	// kept for (the scripts' µs timestamps stay exact in a double).
	MinWindow = time.Minute
	MaxWindow = 365 * 24 * time.Hour
	// MaxBlocks is the most blocks (Window / Precision) a bucketed-hash
	// window may have: its script steps through the blocks it drops, up to
	// blocks / limit in one call, and Redis's Lua unpacks at most 8000
	// values at once; 10,000 blocks are 6 s blocks of an hour-long window.
	MaxBlocks = 10_000
)

// DefaultCounts are the counts capacity measures by default, per
// DefaultWindow: both sides of the sorted set's listpack -> skiplist change
// (128 -> 129 entries).
var DefaultCounts = []int64{10, 100, 128, 129, 1000, 10000}

// Limits returns one limit per count, all of window w and precision p (0:
// bucketed-hash's Window/10): the shape Config.Limits takes.
func Limits(counts []int64, w, p time.Duration) []limit.Limit {
	out := make([]limit.Limit, len(counts))
	for i, n := range counts {
		out[i] = limit.Limit{Count: n, Window: w, Precision: p}
	}
	return out
}

// Config is what `ratelab capacity` measures. The zero Config measures
// every algorithm at DefaultCounts per DefaultWindow with the defaults
// below (Run fills them in, see WithDefaults).
type Config struct {
	// Algorithms are registry names (algorithms.Names); empty means all.
	Algorithms []string
	// Targets are limiters of the user's (scripts), measured after
	// Algorithms like any algorithm without a fill shortcut (Limit calls of
	// cost 1 spread over the window, see FillPlan), named by their Name.
	// They must be algorithms.Scripted (fills are pipelined).
	Targets []targets.Target
	// Limits are the limits to fill keys to, in order: each Count in
	// 1..MaxLimit; all of one Window (MinWindow..MaxWindow: keys get it as
	// their TTL, so it must outlast the measurement) and one Precision
	// (bucketed-hash's block length; 0 means Window/10), as one calibration
	// serves them all (see Limits). Empty means DefaultCounts per
	// DefaultWindow.
	Limits []limit.Limit
	// Keys is N, the keys per algorithm x limit (before the budget scales
	// it down); 0 means DefaultKeys.
	Keys int
	// ActiveKeys is M, the keys the projection is for; 0 means DefaultActiveKeys.
	ActiveKeys int64
	// Budget caps the script calls per algorithm x limit; 0 means
	// DefaultBudget.
	Budget int64
	// RunID names the key prefix "ratelab:<RunID>:"; empty picks a fresh one.
	RunID string
}

// WithDefaults returns cfg with every zero field but RunID set to its
// default (an empty RunID is picked by the session): the one place
// capacity's defaults are applied.
func (cfg Config) WithDefaults() Config {
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = algorithms.Names()
	}
	if len(cfg.Limits) == 0 {
		cfg.Limits = Limits(DefaultCounts, DefaultWindow, 0)
	}
	if cfg.Keys == 0 {
		cfg.Keys = DefaultKeys
	}
	if cfg.ActiveKeys == 0 {
		cfg.ActiveKeys = DefaultActiveKeys
	}
	if cfg.Budget == 0 {
		cfg.Budget = DefaultBudget
	}
	return cfg
}

// Validate checks a complete configuration (as WithDefaults returns it:
// here a zero size is an error, not a default) and returns the first bad
// field as a *field.Error named "algorithms", "targets" (targets.Check), "limits", "keys",
// "active_keys", "window", "precision" or "budget":
//   - every algorithm is known; empty Algorithms means all;
//   - at least one limit, each Count in 1..MaxLimit, all of one window
//     and precision;
//   - Keys in 1..MaxKeys, ActiveKeys in 1..MaxActiveKeys;
//   - Window in MinWindow..MaxWindow;
//   - Precision 0 (Window/10) or in 1ms..Window, and, when bucketed-hash
//     is measured, leaving at most MaxBlocks blocks per window;
//   - Budget in 1..MaxBudget;
//   - every algorithm x limit fits the budget: the fewest keys a fill uses
//     (min(Keys, MinKeys)) x its calls per key (PlanCalls) <= Budget, where
//     a bucketed-hash key counts at least one call per block of the window
//     (its script steps through the blocks it drops: a fine precision
//     would keep the server busy). Otherwise the limit is refused, or the
//     precision when bucketed-hash's blocks are what exceeds, with the
//     numbers.
//
// Nothing that passes makes Run hold more than Budget fill calls at once
// or keep the server busy for long.
func (cfg Config) Validate() error {
	if err := targets.CheckAlgorithms(cfg.Algorithms); err != nil {
		return &field.Error{Name: "algorithms", Err: err}
	}
	if err := targets.Check(cfg.Targets); err != nil {
		return err
	}
	if len(cfg.Limits) == 0 {
		return field.Errorf("limits", "give at least one limit")
	}
	for _, l := range cfg.Limits {
		if l.Count < 1 {
			return field.Errorf("limits", "every limit must be >= 1, got %d", l.Count)
		}
		if l.Count > MaxLimit {
			return field.Errorf("limits", "every limit must be <= %d (2^53), got %d", int64(MaxLimit), l.Count)
		}
		if l.Window != cfg.Limits[0].Window || l.Precision != cfg.Limits[0].Precision {
			return field.Errorf("limits", "every limit must have the window and precision of the first (one calibration serves them all), got %s and %s", cfg.Limits[0], l)
		}
	}
	window, prec := cfg.Limits[0].Window, cfg.Limits[0].Precision
	if err := cfg.Limits[0].Validate(); err != nil && window >= MinWindow && window <= MaxWindow {
		return err // the precision: the counts are checked above, the window below (capacity's own bounds)
	}
	switch {
	case cfg.Keys < 1:
		return field.Errorf("keys", "must be >= 1, got %d", cfg.Keys)
	case cfg.Keys > MaxKeys:
		return field.Errorf("keys", "must be <= %d, got %d", MaxKeys, cfg.Keys)
	case cfg.ActiveKeys < 1:
		return field.Errorf("active_keys", "must be >= 1, got %d", cfg.ActiveKeys)
	case cfg.ActiveKeys > MaxActiveKeys:
		return field.Errorf("active_keys", "must be <= %d, got %d", int64(MaxActiveKeys), cfg.ActiveKeys)
	case window < MinWindow:
		return field.Errorf("window", "must be >= 1m (keys must not expire while measured), got %s", limit.FormatWindow(window))
	case window > MaxWindow:
		return field.Errorf("window", "must be <= %s (a year), got %s", limit.FormatWindow(MaxWindow), limit.FormatWindow(window))
	case prec > 0 && (window-1)/prec >= MaxBlocks &&
		(len(cfg.Algorithms) == 0 || slices.Contains(cfg.Algorithms, "bucketed-hash")):
		return field.Errorf("precision", "must leave at most %d blocks per window (bucketed-hash steps through them), got %d blocks of %s in %s",
			MaxBlocks, (window-1)/prec+1, limit.FormatWindow(prec), limit.FormatWindow(window))
	case cfg.Budget < 1:
		return field.Errorf("budget", "must be >= 1, got %d", cfg.Budget)
	case cfg.Budget > MaxBudget:
		return field.Errorf("budget", "must be <= %d, got %d", MaxBudget, cfg.Budget)
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = algorithms.Names()
	}
	algs = append(slices.Clone(algs), targets.Names(cfg.Targets)...)
	fewest := int64(min(cfg.Keys, MinKeys))
	for _, alg := range algs {
		for _, lim := range cfg.Limits {
			l := forAlgorithm(alg, lim)
			steps := fillSteps(alg, l)
			if steps <= cfg.Budget/fewest {
				continue
			}
			if calls := PlanCalls(alg, l); steps > calls {
				return field.Errorf("precision", "bucketed-hash's script steps through every block of the window: %d blocks of %s per key, x %d keys at least = %d, over the budget of %d calls: raise the precision or the budget",
					steps, precision(l), fewest, steps*fewest, cfg.Budget)
			}
			return field.Errorf("limits", "%d: %s makes %d script calls per key at limit %d, x %d keys at least = %d calls, over the budget of %d: lower the limit or raise the budget",
				l.Count, alg, steps, l.Count, fewest, steps*fewest, cfg.Budget)
		}
	}
	return nil
}

// forAlgorithm is l as capacity fills alg to it: the precision reaches
// bucketed-hash only.
func forAlgorithm(alg string, l limit.Limit) limit.Limit {
	if alg != "bucketed-hash" {
		l.Precision = 0
	}
	return l
}

// window is the one window of cfg.Limits (after WithDefaults).
func (cfg Config) window() time.Duration { return cfg.Limits[0].Window }
