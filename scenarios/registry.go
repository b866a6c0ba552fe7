package scenarios

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Scenario is a named schedule builder.
type Scenario struct {
	// Name is the scenario's contract name, as accepted by Get.
	Name string
	// Description is one line saying what the scenario does and why (shown in help).
	Description string
	// Defaults holds the scenario's own Limit (cost units per window) and
	// Window; its Seed is always 0.
	Defaults Params
	// Build turns parameters into a schedule. It is pure and deterministic:
	// the same Params give an identical Schedule. A Limit or Window <= 0 (the
	// zero value included) is replaced by the one in Defaults; the Schedule's
	// Params record the values actually used. Seed 0 is an ordinary seed.
	Build func(p Params) Schedule
	// Check, when not nil, says whether Build can build p: a scenario file's
	// expressions may divide by zero or give a cost above the limit for some
	// Params, and its Build panics on those. Nil (every built-in) means
	// every Params can be built. Call Make to get both in one step.
	Check func(p Params) error
}

// Make builds the schedule for p, or returns Check's error for Params the
// scenario cannot build (never for a built-in). Errors name the scenario.
func (s Scenario) Make(p Params) (Schedule, error) {
	if s.Check != nil {
		if err := s.Check(p); err != nil {
			return Schedule{}, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	}
	return s.Build(p), nil
}

// Keys and costs used by the scenarios.
const (
	// UserKey is the single key of boundary-burst, steady and overload.
	UserKey = "user"
	// QuotaKey is the shared YouTube quota key of cron-regions (seed 001).
	QuotaKey = "yt:quota:key1"
	// SearchCost is the cost of a search.list call in quota units (seed 001).
	SearchCost int64 = 100
	// VideosCost is the cost of a videos.list call in quota units (seed 001).
	VideosCost int64 = 1
)

// regions are the cron-regions jobs in run order; job r is Client r.
var regions = []string{"US", "GB", "DE", "FR", "IN", "BR", "AU", "CA"}

// order is the order scenarios are listed and run in.
var order = []string{"boundary-burst", "steady", "overload", "cron-regions"}

// Each scenario's own Limit and Window.
var (
	shortDefaults = Params{Limit: 50, Window: 10 * time.Second}
	cronDefaults  = Params{Limit: 9500, Window: 24 * time.Hour}
)

var registry = map[string]Scenario{
	"boundary-burst": {
		Name: "boundary-burst",
		Description: "L requests just before an aligned window boundary and L just after (seed 001's harness): " +
			"a fixed window accepts 2L within W/5",
		Defaults: shortDefaults,
		Build:    boundaryBurst,
	},
	"steady": {
		Name: "steady",
		Description: "L/2 evenly spaced, lightly jittered requests per window for 5 windows: " +
			"never over the limit, so every limiter should accept all of it",
		Defaults: shortDefaults,
		Build:    steady,
	},
	"overload": {
		Name: "overload",
		Description: "15L requests at uniformly random times over 5 windows (3x the limit): " +
			"how much each limiter lets through and how close it stays to the ideal",
		Defaults: shortDefaults,
		Build:    overload,
	},
	"cron-regions": {
		Name: "cron-regions",
		Description: "seed 001's pipeline: 8 regional cron jobs, staggered by minutes, share one daily quota key; " +
			"each hourly run is 1 search (cost 100) + 20 videos (cost 1), 23040 units/day against 9500",
		Defaults: cronDefaults,
		Build:    cronRegions,
	},
}

// Names returns the scenario names in run order: boundary-burst, steady,
// overload, cron-regions. The slice is a fresh copy.
func Names() []string { return append([]string(nil), order...) }

// Get returns the named scenario. An unknown name returns an error listing the
// known names.
func Get(name string) (Scenario, error) {
	s, ok := registry[name]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// withDefaults replaces a non-positive Limit or Window of p by d's.
func withDefaults(p, d Params) Params {
	if p.Limit <= 0 {
		p.Limit = d.Limit
	}
	if p.Window <= 0 {
		p.Window = d.Window
	}
	return p
}

// newRand returns the scenario RNG for seed: a PCG, never the global source.
func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// finish sorts arrivals stably by At and wraps them in a Schedule.
func finish(name string, p Params, arr []Arrival) Schedule {
	byAt := func(a, b Arrival) int { return cmp.Compare(a.At, b.At) }
	if !slices.IsSortedFunc(arr, byAt) { // most are made in order
		slices.SortStableFunc(arr, byAt)
	}
	return Schedule{Scenario: name, Params: p, Arrivals: arr}
}

// boundaryBurst: L cost-1 arrivals starting at -W/10 and L starting at +W/10,
// spaced min(1ms, W/(20L)) apart so a burst never lasts longer than W/20.
func boundaryBurst(p Params) Schedule {
	const name = "boundary-burst"
	p = withDefaults(p, shortDefaults)
	L, W := p.Limit, p.Window
	step := min(time.Millisecond, W/time.Duration(20*L))
	arr := make([]Arrival, 0, 2*L)
	for _, start := range []time.Duration{-W / 10, W / 10} {
		for i := int64(0); i < L; i++ {
			arr = append(arr, Arrival{At: start + time.Duration(i)*step, Key: UserKey, Cost: 1})
		}
	}
	return finish(name, p, arr)
}

// steady: 5 windows from At=0, n = max(1, L/2) arrivals per window at spacing
// s = W/n, each delayed by a seeded jitter in [0, s/4) (none when L < 3).
// Consecutive arrivals are then more than 3s/4 apart, so a window of length W
// holds at most about 4n/3+1 <= L of them.
func steady(p Params) Schedule {
	const name = "steady"
	const windows = 5
	p = withDefaults(p, shortDefaults)
	L, W := p.Limit, p.Window
	n := max(1, L/2)
	s := W / time.Duration(n)
	jmax := int64(s / 4)
	if L < 3 {
		jmax = 0
	}
	rng := newRand(p.Seed)
	arr := make([]Arrival, 0, windows*n)
	for w := int64(0); w < windows; w++ {
		for k := int64(0); k < n; k++ {
			at := time.Duration(w)*W + time.Duration(k)*s
			if jmax > 0 {
				at += time.Duration(rng.Int64N(jmax))
			}
			arr = append(arr, Arrival{At: at, Key: UserKey, Cost: 1})
		}
	}
	return finish(name, p, arr)
}

// overload: 15L cost-1 arrivals at uniformly random times in [0, 5W).
func overload(p Params) Schedule {
	const name = "overload"
	p = withDefaults(p, shortDefaults)
	L, W := p.Limit, p.Window
	span := int64(5 * W)
	rng := newRand(p.Seed)
	arr := make([]Arrival, 0, 15*L)
	for i := int64(0); i < 15*L; i++ {
		arr = append(arr, Arrival{At: time.Duration(rng.Int64N(span)), Key: UserKey, Cost: 1})
	}
	// arrivals at one instant are alike: an unstable sort (n log n, where
	// finish's stable one is n log² n: seconds at L = 10^5) orders them
	// as it would
	slices.SortFunc(arr, func(a, b Arrival) int { return cmp.Compare(a.At, b.At) })
	return finish(name, p, arr)
}

// cronRegions: region r's job runs every P = W/24 at offset r*7P/60 for 24
// periods from -W/2; each run is one search (cost min(100, L)) followed by 20
// videos (cost 1), P/1800 apart. Deterministic: the seed is not used.
func cronRegions(p Params) Schedule {
	const name = "cron-regions"
	const (
		periods      = 24
		videosPerRun = 20
	)
	p = withDefaults(p, cronDefaults)
	L, W := p.Limit, p.Window
	P := W / periods
	gap := P / 1800
	searchCost := min(SearchCost, L)
	arr := make([]Arrival, 0, periods*len(regions)*(1+videosPerRun))
	for k := 0; k < periods; k++ {
		for r := range regions {
			start := -W/2 + time.Duration(k)*P + P*time.Duration(7*r)/60
			arr = append(arr, Arrival{At: start, Key: QuotaKey, Cost: searchCost, Client: r})
			for j := 1; j <= videosPerRun; j++ {
				arr = append(arr, Arrival{At: start + time.Duration(j)*gap, Key: QuotaKey, Cost: VideosCost, Client: r})
			}
		}
	}
	return finish(name, p, arr)
}
