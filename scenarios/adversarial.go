package scenarios

import (
	"fmt"
	"time"
)

// Judge says which property a Trial tests.
type Judge int

const (
	// Safety: no window of length W may hold more than L accepted cost.
	Safety Judge = iota
	// Liveness: under sustained overload, accepted / ideal must stay >= 0.9.
	Liveness
	// Isolation: traffic on one key must not limit another; every request on
	// the probe key (IsolationKey) fits its own limit and must be accepted.
	Isolation
)

// IsolationKey is the key whose requests an Isolation trial expects accepted.
const IsolationKey = "other"

// Trial is one adversarial schedule of `ratelab verify`.
type Trial struct {
	// Family is the adversarial family's name, e.g. "boundary".
	Family string
	// Name says what this trial does, e.g. "L at +0.1W, L at +1.1W-101µs".
	Name     string
	Schedule Schedule
	Judge    Judge
	// RealTime trials must run in real time (they exercise key TTLs or real
	// concurrency); the others run in virtual time when the target takes an
	// injected clock.
	RealTime bool
	// Skew is the per-client clock skew (client c uses Skew[c]); empty: none.
	Skew []time.Duration
	// Greedy, when set, makes the trial adaptive: its arrivals are chosen
	// from the limiter's answers (see Greedy); Schedule then holds only the
	// first arrival. Adaptive trials run in virtual time only, one call at
	// a time.
	Greedy *Greedy
}

// GreedyFamily is the family name of the greedy adversary's trials.
const GreedyFamily = "greedy"

// GreedyMaxLimit is the largest limit the greedy family runs at: it sends
// one request per call, a few calls per admission, sequentially; above it
// the dense family stands in for it.
const GreedyMaxLimit = 1000

// Greedy is the plan of an adaptive trial: cost-1 requests on UserKey from
// client 0, the first at Start; after each acceptance the next comes at the
// same instant; after a denial at the earliest instant the limiter could
// pass it: its own RetryAfter, checked by bisection between the denial and
// that instant (at most BisectSteps probes of Resolution or more apart), or,
// without a RetryAfter, the emission interval W/L ahead (doubling while
// denied). It stops before End or after MaxCalls calls.
type Greedy struct {
	Start, End  time.Duration
	MaxCalls    int
	BisectSteps int
}

// GreedyTrials returns the greedy adversary's trials for limit p.Limit per
// p.Window: starting just before a window boundary (-W/100: a sliding-window
// counter's worst phase) and at -W/2, each for two windows. None when
// p.Limit > GreedyMaxLimit.
func GreedyTrials(p Params) []Trial {
	if p.Limit > GreedyMaxLimit {
		return nil
	}
	var out []Trial
	for _, start := range []time.Duration{-p.Window / 100, -p.Window / 2} {
		g := &Greedy{Start: start, End: start + 2*p.Window, MaxCalls: int(40*p.Limit) + 200, BisectSteps: 4}
		s := finish(GreedyFamily, p, []Arrival{{At: start, Key: UserKey, Cost: 1}})
		out = append(out, Trial{Family: GreedyFamily, Judge: Safety, Schedule: s, Greedy: g,
			Name: fmt.Sprintf("earliest admissible instant after each denial, from %s for 2W", frac(start, p.Window))})
	}
	return out
}

// Attack is how the adversarial families may attack a verified limiter:
// what the limiter lets them vary (Cost, Keys: its
// algorithms.Capabilities, as verify reads them) and the attack's own
// setting (Clients, Skew).
type Attack struct {
	// Cost: the limiter honours costs above 1 (else only cost 1 is sent).
	Cost bool
	// Keys: the limiter can be given distinct keys (an HTTP endpoint cannot).
	Keys bool
	// Clients is the number of concurrent clients of the concurrency
	// families; zero means 8.
	Clients int
	// Skew is the clock skew delta of the skew family; zero leaves the
	// family out.
	Skew time.Duration
	// Step, when above 1 µs, is the limiter's clock step (1 ms for a script
	// whose only clock is key expiry): the phases family's "L after
	// probe+W" burst then starts one Step later, when a window opened by
	// the probe has certainly ended on that clock. Zero: 1 µs.
	Step time.Duration
}

// Families lists the adversarial families in the order verify reports them.
var Families = []string{"boundary", "phases", "same-instant", "concurrent", "overload", DenseFamily, GreedyFamily, "idle-gaps", "weighted", "isolation", "skew"}

// Adversarial returns the trials of every family for limit p.Limit per
// p.Window (p.Seed seeds the random ones) that attack t allows. Times are relative to an aligned
// window boundary. Pure: the same arguments give the same trials.
//
// Bursts send L requests of cost 1, 1 µs apart unless said otherwise, so a
// correct limiter can tell them apart in time and the whole burst stays far
// shorter than any window ratelab accepts (>= 1 ms) for L up to ~10^3.
func Adversarial(p Params, t Attack) []Trial {
	if t.Clients <= 0 {
		t.Clients = 8
	}
	L, W := p.Limit, p.Window
	us := time.Microsecond
	b := &trialBuilder{p: p}

	// 1. bursts at epoch-aligned window boundaries
	b.add("boundary", "L ending 1µs before the boundary, L from it", Safety, false,
		burst(-time.Duration(L)*us, L, us, 0), burst(0, L, us, 0))
	b.add("boundary", "L at -W/10, L at +W/10 (seed 001's harness)", Safety, false,
		burst(-W/10, L, us, 0), burst(W/10, L, us, 0))
	b.add("boundary", "L at -1µs, L at the boundary, each at one instant", Safety, false,
		burst(-us, L, 0, 0), burst(0, L, 0, 0))

	// 2. bursts at many phases of the window; the second burst one window
	// later minus a gap that leaves both inside one window
	burstLen := time.Duration(L) * us
	phases := []time.Duration{0, W/100 - burstLen - us, W/20 - burstLen - us, W/10 - burstLen - us,
		W / 3, W/2 - burstLen - us, 2 * W / 3, W - burstLen - us}
	gaps := []time.Duration{W / 2, W / 10, 2*burstLen + us}
	for _, ph := range phases {
		if ph < 0 {
			continue
		}
		for _, g := range gaps {
			second := ph + W - g
			if second < ph+burstLen {
				continue
			}
			b.add("phases", fmt.Sprintf("L at %s, L at %s", frac(ph, W), frac(second, W)), Safety, false,
				burst(ph, L, us, 0), burst(second, L, us, 0))
		}
		// limiters whose window starts at a key's first hit: probe, then
		// bursts just before and just after probe + W
		after, name := ph+W, "probe+W"
		if t.Step > us {
			after, name = ph+W+t.Step, "probe+W+"+t.Step.String()
		}
		b.add("phases", fmt.Sprintf("probe at %s, L before and L after %s", frac(ph, W), name), Safety, false,
			burst(ph, 1, 0, 0), burst(ph+W-burstLen-us, L, us, 0), burst(after, L, us, 0))
	}

	// 3. same-instant bursts: identical timestamps
	b.add("same-instant", "2L at one instant", Safety, false, burst(W/3, 2*L, 0, 0))
	b.add("same-instant", "L at one instant, then L at one later instant within W", Safety, false,
		burst(W/3, L, 0, 0), burst(W/3+W/2, L, 0, 0))

	// 4. N concurrent clients on one key: the same instant for all (virtual),
	// and as fast as they can across the boundary (real time)
	per := max(1, (2*L+int64(t.Clients)-1)/int64(t.Clients))
	var conc []Arrival
	for c := 0; c < t.Clients; c++ {
		conc = append(conc, burst(-us, per, 0, c)...)
		conc = append(conc, burst(W/2, per, 0, c)...)
	}
	b.add("concurrent", fmt.Sprintf("%d clients x %d at one instant, twice within W", t.Clients, per), Safety, false, conc)
	var concRT []Arrival
	for c := 0; c < t.Clients; c++ {
		concRT = append(concRT, burst(-W/20, per, 0, c)...)
		concRT = append(concRT, burst(0, per, 0, c)...)
	}
	b.add("concurrent", fmt.Sprintf("%d clients x %d in real time before and at the boundary", t.Clients, per), Safety, true, concRT)

	// 5. sustained overload: safety, and liveness against the ideal log
	over := registry["overload"].Build(Params{Limit: L, Window: W, Seed: p.Seed})
	b.add("overload", "3L per window for 5 windows, random times", Safety, false, over.Arrivals)
	b.add("overload", "3L per window for 5 windows: accepted / ideal >= 0.9", Liveness, false, over.Arrivals)

	// 5b. the dense stream (rounding) and the greedy adversary (adaptive)
	b.trials = append(b.trials, DenseTrial(p, 0))
	b.trials = append(b.trials, GreedyTrials(p)...)

	// 6. idle gaps: a full burst, silence, another burst (real time: exposes TTLs)
	for _, f := range []float64{0.3, 0.6, 0.9} {
		gap := time.Duration(f * float64(W))
		b.add("idle-gaps", fmt.Sprintf("L, %.1fW of silence, L", f), Safety, true,
			burst(0, L, 0, 0), burst(gap, L, 0, 0))
	}

	// 7. weighted costs near the limit
	if t.Cost && L > 1 {
		b.add("weighted", "L-1 and 1 before the boundary, 1 and L-1 after", Safety, false,
			[]Arrival{{At: -2 * us, Cost: L - 1}, {At: -us, Cost: 1}, {At: 0, Cost: 1}, {At: us, Cost: L - 1}})
		b.add("weighted", "L-1, a denied L, then 1: a denied cost is not recorded", Safety, false,
			[]Arrival{{At: 0, Cost: L - 1}, {At: us, Cost: L}, {At: 2 * us, Cost: 1}, {At: W - us, Cost: L}})
		r := newRand(p.Seed + 7)
		costs := []int64{1, 2, max(1, L/4), max(1, L/2), L - 1, L}
		for k := 0; k < 3; k++ {
			var arr []Arrival
			var sum int64
			for sum < 4*L {
				c := costs[r.IntN(len(costs))]
				arr = append(arr, Arrival{At: time.Duration(r.Int64N(int64(2*W))) - W, Cost: c})
				sum += c
			}
			b.add("weighted", fmt.Sprintf("random costs 1..L around the boundary (set %d)", k+1), Safety, false, arr)
		}
		var arr []Arrival
		for i, a := range over.Arrivals {
			a.Cost = costs[i%len(costs)]
			arr = append(arr, a)
		}
		b.add("weighted", "weighted overload: accepted / ideal >= 0.9", Liveness, false, arr)
	}

	// 9. key isolation
	if t.Keys {
		var arr []Arrival
		for i := int64(0); i < 2*L; i++ {
			arr = append(arr, Arrival{At: time.Duration(i) * us, Key: UserKey, Cost: 1})
		}
		for i := int64(0); i < L; i++ {
			arr = append(arr, Arrival{At: time.Duration(2*L+i) * us, Key: IsolationKey, Cost: 1})
		}
		b.add("isolation", "2L on one key, then L on another: all L accepted", Isolation, false, arr)
		arr = nil
		for i := int64(0); i < 2*L; i++ {
			arr = append(arr, Arrival{At: time.Duration(i) * us, Key: UserKey, Cost: 1})
			if i < L {
				arr = append(arr, Arrival{At: time.Duration(i) * us, Key: IsolationKey, Cost: 1})
			}
		}
		b.add("isolation", "interleaved keys at the same instants", Isolation, false, arr)
	}

	// 10. skewed client clocks: client 0 runs delta behind, client 1 delta ahead
	if t.Skew > 0 && 2*t.Skew > 2*burstLen+2*us {
		second := W - 2*t.Skew + burstLen + us
		arr := append(burst(0, L, us, 0), burst(second, L, us, 1)...)
		tr := b.add("skew", fmt.Sprintf("client clocks -%s and +%s: L at 0, L at %s (true time)", t.Skew, t.Skew, frac(second, W)), Safety, false, arr)
		tr.Skew = []time.Duration{-t.Skew, t.Skew}
	}
	return b.trials
}

type trialBuilder struct {
	p      Params
	trials []Trial
}

func (b *trialBuilder) add(family, name string, j Judge, realTime bool, parts ...[]Arrival) *Trial {
	var arr []Arrival
	for _, p := range parts {
		for _, a := range p {
			if a.Key == "" {
				a.Key = UserKey
			}
			if a.Cost > b.p.Limit {
				a.Cost = b.p.Limit
			}
			arr = append(arr, a)
		}
	}
	s := finish(family, b.p, arr)
	b.trials = append(b.trials, Trial{Family: family, Name: name, Schedule: s, Judge: j, RealTime: realTime})
	return &b.trials[len(b.trials)-1]
}

// burst returns n cost-1 arrivals from start, step apart, from client c.
func burst(start time.Duration, n int64, step time.Duration, c int) []Arrival {
	out := make([]Arrival, n)
	for i := range out {
		out[i] = Arrival{At: start + time.Duration(i)*step, Cost: 1, Client: c}
	}
	return out
}

// frac renders an offset from the boundary: "0", "+1.5s", "-1µs".
func frac(d, _ time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}
