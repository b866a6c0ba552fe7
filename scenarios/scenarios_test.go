package scenarios

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// build gets the named scenario and builds it with p, failing the test on an
// unknown name.
func build(t *testing.T, name string, p Params) Schedule {
	t.Helper()
	sc, err := Get(name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return sc.Build(p)
}

// effective is p with a zero Limit or Window replaced by the scenario's default.
func effective(t *testing.T, name string, p Params) Params {
	t.Helper()
	sc, err := Get(name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	if p.Limit <= 0 {
		p.Limit = sc.Defaults.Limit
	}
	if p.Window <= 0 {
		p.Window = sc.Defaults.Window
	}
	return p
}

// checkInvariants checks what every schedule must satisfy: the scenario name,
// the effective Params, arrivals sorted by At, 1 <= Cost <= Limit, a non-empty
// key and a non-negative client.
func checkInvariants(t *testing.T, name string, p Params, s Schedule) {
	t.Helper()
	if s.Scenario != name {
		t.Errorf("Scenario = %q, want %q", s.Scenario, name)
	}
	if s.Params != p {
		t.Errorf("Params = %+v, want %+v", s.Params, p)
	}
	for i, a := range s.Arrivals {
		if i > 0 && a.At < s.Arrivals[i-1].At {
			t.Fatalf("arrival %d at %v before arrival %d at %v: not sorted", i, a.At, i-1, s.Arrivals[i-1].At)
		}
		if a.Cost < 1 || a.Cost > p.Limit {
			t.Fatalf("arrival %d cost %d outside [1, %d]", i, a.Cost, p.Limit)
		}
		if a.Key == "" || a.Client < 0 {
			t.Fatalf("arrival %d: key %q client %d", i, a.Key, a.Client)
		}
	}
}

// maxInWindow is the largest cost sum whose times fit in one half-open
// interval (t-W, t], by brute force over every arrival as t.
func maxInWindow(arr []Arrival, w time.Duration) int64 {
	var best int64
	for _, end := range arr {
		var sum int64
		for _, a := range arr {
			if a.At > end.At-w && a.At <= end.At {
				sum += a.Cost
			}
		}
		best = max(best, sum)
	}
	return best
}

func TestSchedules(t *testing.T) {
	const sec, ms = time.Second, time.Millisecond
	cases := []struct {
		scenario string
		p        Params
		// count of arrivals; sum of their costs
		count int
		sum   int64
		// first and last At lie in [lo, hi] (lo == hi: exact)
		firstLo, firstHi, lastLo, lastHi time.Duration
		key                              string
		clients                          int // distinct Client values, numbered 0..clients-1
	}{
		// boundary-burst at the defaults (50 per 10s): seed 001's harness,
		// bursts from -1s and +1s, 1ms apart.
		{"boundary-burst", Params{}, 100, 100, -sec, -sec, sec + 49*ms, sec + 49*ms, "user", 1},
		// a large limit shrinks the spacing to W/(20L) = 500µs.
		{"boundary-burst", Params{Limit: 1000, Window: 10 * sec}, 2000, 2000,
			-sec, -sec, sec + 999*500*time.Microsecond, sec + 999*500*time.Microsecond, "user", 1},
		// a small window: bursts from ±100ms, still 1ms apart.
		{"boundary-burst", Params{Limit: 3, Window: sec, Seed: 9}, 6, 6, -100 * ms, -100 * ms, 102 * ms, 102 * ms, "user", 1},
		// L = 1: one arrival each side.
		{"boundary-burst", Params{Limit: 1, Window: 10 * sec}, 2, 2, -sec, -sec, sec, sec, "user", 1},
		// steady at the defaults: 25 per window (spacing 400ms, jitter < 100ms) for 5 windows.
		{"steady", Params{Seed: 1}, 125, 125, 0, 100*ms - 1, 40*sec + 24*400*ms, 40*sec + 24*400*ms + 100*ms - 1, "user", 1},
		// steady with L = 1: exactly one arrival per window on the boundary, no jitter.
		{"steady", Params{Limit: 1, Window: sec, Seed: 5}, 5, 5, 0, 0, 4 * sec, 4 * sec, "user", 1},
		// steady with L = 2: still one per window (L/2), no jitter.
		{"steady", Params{Limit: 2, Window: sec, Seed: 5}, 5, 5, 0, 0, 4 * sec, 4 * sec, "user", 1},
		// steady with L = 3: one per window with jitter < W/4.
		{"steady", Params{Limit: 3, Window: sec, Seed: 5}, 5, 5, 0, 250*ms - 1, 4 * sec, 4*sec + 250*ms - 1, "user", 1},
		// overload at the defaults: 750 arrivals in [0, 50s).
		{"overload", Params{Seed: 3}, 750, 750, 0, 50*sec - 1, 0, 50*sec - 1, "user", 1},
		// overload with L = 1: 15 arrivals in [0, 5s).
		{"overload", Params{Limit: 1, Window: sec}, 15, 15, 0, 5*sec - 1, 0, 5*sec - 1, "user", 1},
		// cron-regions at the defaults (9500 per 24h): 8 regions x 24 runs x 21 calls,
		// 23040 units; from -12h to CA's last run at 11:49 plus 40s of calls.
		{"cron-regions", Params{}, 8 * 24 * 21, 23040,
			-12 * time.Hour, -12 * time.Hour, 11*time.Hour + 49*time.Minute + 40*sec, 11*time.Hour + 49*time.Minute + 40*sec, "yt:quota:key1", 8},
		// cron-regions with L < 100: the search cost is capped at L = 50.
		{"cron-regions", Params{Limit: 50}, 8 * 24 * 21, 8 * 24 * (50 + 20),
			-12 * time.Hour, -12 * time.Hour, 11*time.Hour + 49*time.Minute + 40*sec, 11*time.Hour + 49*time.Minute + 40*sec, "yt:quota:key1", 8},
		// cron-regions over one hour: P = 150s, regions 17.5s apart, calls 83.333333ms apart.
		{"cron-regions", Params{Limit: 9500, Window: time.Hour}, 8 * 24 * 21, 23040,
			-30 * time.Minute, -30 * time.Minute,
			-30*time.Minute + 23*150*sec + 7*17500*ms + 20*83333333, -30*time.Minute + 23*150*sec + 7*17500*ms + 20*83333333,
			"yt:quota:key1", 8},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/L=%d,W=%v,seed=%d", c.scenario, c.p.Limit, c.p.Window, c.p.Seed), func(t *testing.T) {
			p := effective(t, c.scenario, c.p)
			s := build(t, c.scenario, c.p)
			checkInvariants(t, c.scenario, p, s)
			if len(s.Arrivals) != c.count {
				t.Fatalf("%+v: %d arrivals, want %d", c.p, len(s.Arrivals), c.count)
			}
			var sum int64
			clients := map[int]bool{}
			for _, a := range s.Arrivals {
				sum += a.Cost
				clients[a.Client] = true
				if a.Key != c.key {
					t.Fatalf("key %q, want %q", a.Key, c.key)
				}
			}
			if sum != c.sum {
				t.Errorf("%+v: cost sum %d, want %d", c.p, sum, c.sum)
			}
			for i := 0; i < c.clients; i++ {
				if !clients[i] {
					t.Errorf("client %d missing", i)
				}
			}
			if len(clients) != c.clients {
				t.Errorf("%d distinct clients, want %d", len(clients), c.clients)
			}
			first, last := s.Arrivals[0].At, s.Arrivals[len(s.Arrivals)-1].At
			if first < c.firstLo || first > c.firstHi {
				t.Errorf("%+v: first At %v, want in [%v, %v]", c.p, first, c.firstLo, c.firstHi)
			}
			if last < c.lastLo || last > c.lastHi {
				t.Errorf("%+v: last At %v, want in [%v, %v]", c.p, last, c.lastLo, c.lastHi)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	cases := []struct {
		scenario string
		p        Params
		// seedMatters: a different seed must give a different schedule
		seedMatters bool
	}{
		// boundary-burst has no randomness.
		{"boundary-burst", Params{Seed: 1}, false},
		// steady's jitter comes from the seed.
		{"steady", Params{Seed: 1}, true},
		// overload's times come from the seed.
		{"overload", Params{Seed: 1}, true},
		// overload with a small limit still differs by seed.
		{"overload", Params{Limit: 2, Window: time.Second, Seed: 42}, true},
		// cron-regions is deterministic.
		{"cron-regions", Params{Seed: 1}, false},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			a, b := build(t, c.scenario, c.p), build(t, c.scenario, c.p)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("same Params %+v gave different schedules", c.p)
			}
			q := c.p
			q.Seed++
			d := build(t, c.scenario, q)
			same := reflect.DeepEqual(a.Arrivals, d.Arrivals)
			if c.seedMatters && same {
				t.Errorf("seeds %d and %d gave the same arrivals", c.p.Seed, q.Seed)
			}
			if !c.seedMatters && !same {
				t.Errorf("seeds %d and %d gave different arrivals for a seedless scenario", c.p.Seed, q.Seed)
			}
		})
	}
}

func TestSteadyNeverOverLimit(t *testing.T) {
	limits := []int64{1, 2, 3, 4, 5, 6, 7, 10, 11, 50, 101, 400}
	windows := []time.Duration{
		time.Second,
		10 * time.Second,
		time.Minute,
		7*time.Millisecond + 3, // odd nanoseconds: spacing and jitter truncate
		24 * time.Hour,
	}
	for _, l := range limits {
		for _, w := range windows {
			for seed := int64(0); seed < 8; seed++ {
				p := Params{Limit: l, Window: w, Seed: seed}
				s := build(t, "steady", p)
				checkInvariants(t, "steady", p, s)
				if want := 5 * max(1, l/2); int64(len(s.Arrivals)) != want {
					t.Fatalf("%+v: %d arrivals, want %d", p, len(s.Arrivals), want)
				}
				if m := maxInWindow(s.Arrivals, w); m > l {
					t.Fatalf("%+v: %d arrivals in one window, limit %d", p, m, l)
				}
				if s.Arrivals[0].At < 0 || s.Arrivals[len(s.Arrivals)-1].At >= 5*w {
					t.Fatalf("%+v: arrivals outside [0, 5W)", p)
				}
			}
		}
	}
}

func TestBoundaryBurstShape(t *testing.T) {
	cases := []Params{
		{},                              // the defaults: 50 per 10s
		{Limit: 1, Window: time.Second}, // one request each side
		{Limit: 10, Window: 100 * time.Millisecond}, // spacing W/(20L) = 500µs < 1ms
		{Limit: 5000, Window: time.Minute},          // spacing 600µs
		{Limit: 1000, Window: 24 * time.Hour},       // spacing capped at 1ms
	}
	for _, p := range cases {
		ep := effective(t, "boundary-burst", p)
		L, W := ep.Limit, ep.Window
		s := build(t, "boundary-burst", p)
		checkInvariants(t, "boundary-burst", ep, s)
		if int64(len(s.Arrivals)) != 2*L {
			t.Fatalf("%+v: %d arrivals, want %d", ep, len(s.Arrivals), 2*L)
		}
		before, after := s.Arrivals[:L], s.Arrivals[L:]
		for name, b := range map[string][]Arrival{"before": before, "after": after} {
			start := W / 10
			if name == "before" {
				start = -start
			}
			if b[0].At != start {
				t.Errorf("%+v: %s burst starts at %v, want %v", ep, name, b[0].At, start)
			}
			if d := b[len(b)-1].At - b[0].At; d > W/20 {
				t.Errorf("%+v: %s burst lasts %v > W/20 = %v", ep, name, d, W/20)
			}
			for i := 1; i < len(b); i++ {
				if gap := b[i].At - b[i-1].At; gap > time.Millisecond {
					t.Fatalf("%+v: %s burst gap %v > 1ms", ep, name, gap)
				}
			}
		}
		if before[L-1].At >= 0 || after[0].At <= 0 {
			t.Errorf("%+v: bursts do not straddle the boundary: %v .. %v", ep, before[L-1].At, after[0].At)
		}
		// all 2L fit in one window: a fixed window would accept 2L.
		if m := maxInWindow(s.Arrivals, W); m != 2*L {
			t.Errorf("%+v: max in one window %d, want %d", ep, m, 2*L)
		}
	}
}

func TestCronRegionsShape(t *testing.T) {
	cases := []Params{
		{},                                    // the defaults: 9500 per 24h
		{Limit: 100, Window: 24 * time.Hour},  // search cost exactly L
		{Limit: 9500, Window: 2 * time.Hour},  // a shorter day: P = 5 min
		{Limit: 1, Window: 24*time.Hour + 13}, // every call costs 1; odd nanoseconds
	}
	for _, p := range cases {
		ep := effective(t, "cron-regions", p)
		W := ep.Window
		P := W / 24
		s := build(t, "cron-regions", p)
		checkInvariants(t, "cron-regions", ep, s)
		searchCost := min(int64(100), ep.Limit)
		searches, videos := 0, 0
		var sum int64
		perClient := map[int][]Arrival{}
		for _, a := range s.Arrivals {
			if a.At < -W/2 || a.At >= W/2 {
				t.Fatalf("%+v: At %v outside [-W/2, W/2)", ep, a.At)
			}
			if a.Key != "yt:quota:key1" {
				t.Fatalf("key %q", a.Key)
			}
			sum += a.Cost
			perClient[a.Client] = append(perClient[a.Client], a)
		}
		if len(perClient) != 8 {
			t.Fatalf("%+v: %d clients, want 8", ep, len(perClient))
		}
		for r := 0; r < 8; r++ {
			runs := perClient[r]
			if len(runs) != 24*21 {
				t.Fatalf("%+v: client %d has %d calls, want %d", ep, r, len(runs), 24*21)
			}
			for k := 0; k < 24; k++ {
				run := runs[k*21 : (k+1)*21]
				start := -W/2 + time.Duration(k)*P + P*time.Duration(7*r)/60
				if run[0].At != start || run[0].Cost != searchCost {
					t.Fatalf("%+v: region %d run %d starts with %+v, want search (cost %d) at %v", ep, r, k, run[0], searchCost, start)
				}
				searches++
				for j := 1; j <= 20; j++ {
					if run[j].Cost != 1 || run[j].At != start+time.Duration(j)*(P/1800) {
						t.Fatalf("%+v: region %d run %d call %d = %+v", ep, r, k, j, run[j])
					}
					videos++
				}
			}
		}
		if searches != 8*24 || videos != 8*24*20 {
			t.Errorf("%+v: %d searches, %d videos", ep, searches, videos)
		}
		if want := int64(8*24) * (searchCost + 20); sum != want {
			t.Errorf("%+v: cost sum %d, want %d", ep, sum, want)
		}
	}
	// at the defaults the regions start minutes 0, 7, ..., 49 past the hour.
	s := build(t, "cron-regions", Params{})
	for _, a := range s.Arrivals[:8*21] {
		if a.Cost == 100 && a.At != -12*time.Hour+time.Duration(7*a.Client)*time.Minute {
			t.Errorf("region %d first search at %v", a.Client, a.At)
		}
	}
}

func TestRegistry(t *testing.T) {
	want := []string{"boundary-burst", "steady", "overload", "cron-regions"}
	if got := Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	Names()[0] = "mutated"
	if Names()[0] != "boundary-burst" {
		t.Fatal("Names() shares its slice")
	}
	cases := []struct {
		name string
		// ok: Get must succeed; otherwise the error must list every known name
		ok bool
	}{
		{"boundary-burst", true}, // each contract name resolves
		{"steady", true},
		{"overload", true},
		{"cron-regions", true},
		{"nope", false},   // unknown
		{"", false},       // empty
		{"Steady", false}, // names are case-sensitive
	}
	for _, c := range cases {
		sc, err := Get(c.name)
		if c.ok {
			if err != nil {
				t.Errorf("Get(%q): %v", c.name, err)
				continue
			}
			if sc.Name != c.name || sc.Build == nil || sc.Description == "" || strings.Contains(sc.Description, "\n") {
				t.Errorf("Get(%q) = %+v", c.name, sc)
			}
			if sc.Defaults.Limit <= 0 || sc.Defaults.Window <= 0 || sc.Defaults.Seed != 0 {
				t.Errorf("%s defaults %+v", c.name, sc.Defaults)
			}
			continue
		}
		if err == nil {
			t.Errorf("Get(%q) succeeded", c.name)
			continue
		}
		for _, n := range want {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("Get(%q) error %q does not name %q", c.name, err, n)
			}
		}
	}
	if d := mustGet(t, "cron-regions").Defaults; d.Limit != 9500 || d.Window != 24*time.Hour {
		t.Errorf("cron-regions defaults %+v", d)
	}
	if d := mustGet(t, "boundary-burst").Defaults; d.Limit != 50 || d.Window != 10*time.Second {
		t.Errorf("boundary-burst defaults %+v", d)
	}
}

func mustGet(t *testing.T, name string) Scenario {
	t.Helper()
	sc, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestLimitOne builds every scenario with L = 1: every cost must still be 1.
func TestLimitOne(t *testing.T) {
	for _, name := range Names() {
		p := Params{Limit: 1, Window: time.Second, Seed: 7}
		s := build(t, name, p)
		checkInvariants(t, name, p, s)
		if len(s.Arrivals) == 0 {
			t.Errorf("%s: empty schedule", name)
		}
	}
}
