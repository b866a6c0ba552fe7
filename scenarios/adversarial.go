package scenarios

import (
	"fmt"
	"iter"
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
	// Program, Expiry and Search, when set, make the trial adaptive too
	// (see adaptive.go): a burst program (the cautious family and the
	// search's candidates), the expiry-aware client, the searching
	// adversary; Probe, the probing client (probe.go). At most one of
	// Greedy, Program, Expiry, Search, Probe is set.
	Program *Program
	Expiry  *Expiry
	Search  *Search
	Probe   *Probe
	// Stream, when set (always with Build), makes the same arrivals as
	// Build, in order, as they are read, holding none of them: for a
	// runner that sends them in order (harness.Job.Arrivals). The largest
	// trials of AdversarialPlan have one (stream.go). Each reads it.
	Stream iter.Seq[Arrival]
	// Build, when set, makes the trial's arrivals on demand (a new slice
	// on each call, the same arrivals every time: sorted by At, keys and
	// costs as in a Schedule); Schedule.Arrivals is then empty, its
	// Scenario and Params set. AdversarialPlan's trials are built so: at a
	// limit of 10^5 a verification's trials hold ~16 M arrivals. Nil: the
	// arrivals are Schedule.Arrivals.
	Build func() []Arrival
}

// Arrivals returns t's arrivals: made by Build when it is set (a fresh
// slice), else Schedule.Arrivals (shared).
func (t Trial) Arrivals() []Arrival {
	if t.Build != nil {
		return t.Build()
	}
	return t.Schedule.Arrivals
}

// Built returns t with its arrivals in Schedule.Arrivals and no Build
// (nor Stream).
func (t Trial) Built() Trial {
	if t.Build != nil {
		t.Schedule.Arrivals, t.Build, t.Stream = t.Build(), nil, nil
	}
	return t
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
	// Resolution is the finest time step the limiter tells apart (its
	// algorithms.Capabilities.Resolution); zero means 1 µs. The adaptive
	// families and the dense family's fine trial step by it, not by W.
	Resolution time.Duration
	// SearchDecisions is how many calls the searching adversary may make
	// (its budget); zero or negative leaves the search family out.
	SearchDecisions int64
}

// Families lists the adversarial families in the order verify reports them.
var Families = []string{"boundary", "phases", "same-instant", "concurrent", "overload", DenseFamily, GreedyFamily,
	CautiousFamily, ExpiryFamily, SearchFamily, "idle-gaps", "weighted", "isolation", "skew"}

// AdversarialPlan returns the trials of every family for limit p.Limit per
// p.Window (p.Seed seeds the random ones) that attack t allows; times are
// relative to an aligned window boundary. The arrivals of the fixed
// schedules are made on demand by their Build (Trial.Arrivals, Built), so that
// a caller holds only the arrivals of the trials it is running: L = 10^5
// makes ~16 M of them. The adaptive trials and the dense family's fine
// trial, which are short, hold theirs in Schedule. Pure.
//
// Bursts send L requests of cost 1, 1 µs apart unless said otherwise, so a
// correct limiter can tell them apart in time and the whole burst stays far
// shorter than any window ratelab accepts (>= 1 ms) for L up to ~10^3.
func AdversarialPlan(p Params, t Attack) []Trial {
	if t.Clients <= 0 {
		t.Clients = 8
	}
	L, W := p.Limit, p.Window
	us := time.Microsecond
	b := &trialBuilder{p: p}

	// 1. bursts at epoch-aligned window boundaries
	b.add("boundary", "L ending 1µs before the boundary, L from it", Safety, false,
		bu(-time.Duration(L)*us, L, us, 0), bu(0, L, us, 0))
	b.add("boundary", "L at -W/10, L at +W/10 (seed 001's harness)", Safety, false,
		bu(-W/10, L, us, 0), bu(W/10, L, us, 0))
	b.add("boundary", "L at -1µs, L at the boundary, each at one instant", Safety, false,
		bu(-us, L, 0, 0), bu(0, L, 0, 0))

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
				bu(ph, L, us, 0), bu(second, L, us, 0))
		}
		// limiters whose window starts at a key's first hit: probe, then
		// bursts just before and just after probe + W
		after, name := ph+W, "probe+W"
		if t.Step > us {
			after, name = ph+W+t.Step, "probe+W+"+t.Step.String()
		}
		b.add("phases", fmt.Sprintf("probe at %s, L before and L after %s", frac(ph, W), name), Safety, false,
			bu(ph, 1, 0, 0), bu(ph+W-burstLen-us, L, us, 0), bu(after, L, us, 0))
	}

	// 3. same-instant bursts: identical timestamps
	b.add("same-instant", "2L at one instant", Safety, false, bu(W/3, 2*L, 0, 0))
	b.add("same-instant", "L at one instant, then L at one later instant within W", Safety, false,
		bu(W/3, L, 0, 0), bu(W/3+W/2, L, 0, 0))

	// 4. N concurrent clients on one key: the same instant for all (virtual),
	// and as fast as they can across the boundary (real time)
	per := max(1, (2*L+int64(t.Clients)-1)/int64(t.Clients))
	clients := func(first, second time.Duration) func() []Arrival {
		return func() []Arrival {
			arr := make([]Arrival, 0, 2*per*int64(t.Clients))
			for c := 0; c < t.Clients; c++ {
				arr = append(arr, burst(first, per, 0, c)...)
				arr = append(arr, burst(second, per, 0, c)...)
			}
			return arr
		}
	}
	b.add("concurrent", fmt.Sprintf("%d clients x %d at one instant, twice within W", t.Clients, per), Safety, false, clients(-us, W/2))
	b.add("concurrent", fmt.Sprintf("%d clients x %d in real time before and at the boundary", t.Clients, per), Safety, true, clients(-W/20, 0))

	// 5. sustained overload: safety, and liveness against the ideal log
	// (streamed: 15L arrivals each; the same as registry["overload"]'s)
	over := overloadStream(Params{Limit: L, Window: W, Seed: p.Seed})
	b.addStream("overload", "3L per window for 5 windows, random times", Safety, 15*L, over)
	b.addStream("overload", "3L per window for 5 windows: accepted / ideal >= 0.9", Liveness, 15*L, over)

	// 5b. the dense stream (rounding) and the greedy adversary (adaptive)
	b.trials = append(b.trials, denseTrial(p, 0))
	if f, ok := DenseFineTrial(p, t.Resolution); ok {
		b.trials = append(b.trials, f)
	}
	b.trials = append(b.trials, GreedyTrials(p)...)

	// 5c. the cautious and expiry-aware clients, and the search (adaptive)
	b.trials = append(b.trials, CautiousTrials(p, t.Resolution)...)
	b.trials = append(b.trials, ExpiryTrials(p, t.Resolution)...)
	b.trials = append(b.trials, SearchTrials(p, t.Resolution, t.SearchDecisions, t.Cost)...)
	b.trials = append(b.trials, ProbeTrials(p, t.Resolution)...)

	// 6. idle gaps: a full burst, silence, another burst (real time: exposes TTLs)
	for _, f := range []float64{0.3, 0.6, 0.9} {
		gap := time.Duration(f * float64(W))
		b.add("idle-gaps", fmt.Sprintf("L, %.1fW of silence, L", f), Safety, true,
			bu(0, L, 0, 0), bu(gap, L, 0, 0))
	}

	// 7. weighted costs near the limit
	if t.Cost && L > 1 {
		b.add("weighted", "L-1 and 1 before the boundary, 1 and L-1 after", Safety, false,
			fixed([]Arrival{{At: -2 * us, Cost: L - 1}, {At: -us, Cost: 1}, {At: 0, Cost: 1}, {At: us, Cost: L - 1}}))
		b.add("weighted", "L-1, a denied L, then 1: a denied cost is not recorded", Safety, false,
			fixed([]Arrival{{At: 0, Cost: L - 1}, {At: us, Cost: L}, {At: 2 * us, Cost: 1}, {At: W - us, Cost: L}}))
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
			b.add("weighted", fmt.Sprintf("random costs 1..L around the boundary (set %d)", k+1), Safety, false, fixed(arr))
		}
		b.addStream("weighted", "weighted overload: accepted / ideal >= 0.9", Liveness, 15*L, func(yield func(Arrival) bool) {
			i := 0
			for a := range over {
				a.Cost = costs[i%len(costs)]
				if !yield(a) {
					return
				}
				i++
			}
		})
	}

	// 9. key isolation
	if t.Keys {
		b.add("isolation", "2L on one key, then L on another: all L accepted", Isolation, false, func() []Arrival {
			arr := make([]Arrival, 0, 3*L)
			for i := int64(0); i < 2*L; i++ {
				arr = append(arr, Arrival{At: time.Duration(i) * us, Key: UserKey, Cost: 1})
			}
			for i := int64(0); i < L; i++ {
				arr = append(arr, Arrival{At: time.Duration(2*L+i) * us, Key: IsolationKey, Cost: 1})
			}
			return arr
		})
		b.add("isolation", "interleaved keys at the same instants", Isolation, false, func() []Arrival {
			arr := make([]Arrival, 0, 3*L)
			for i := int64(0); i < 2*L; i++ {
				arr = append(arr, Arrival{At: time.Duration(i) * us, Key: UserKey, Cost: 1})
				if i < L {
					arr = append(arr, Arrival{At: time.Duration(i) * us, Key: IsolationKey, Cost: 1})
				}
			}
			return arr
		})
	}

	// 10. skewed client clocks: client 0 runs delta behind, client 1 delta ahead
	if t.Skew > 0 && 2*t.Skew > 2*burstLen+2*us {
		second := W - 2*t.Skew + burstLen + us
		tr := b.add("skew", fmt.Sprintf("client clocks -%s and +%s: L at 0, L at %s (true time)", t.Skew, t.Skew, frac(second, W)), Safety, false,
			bu(0, L, us, 0), bu(second, L, us, 1))
		tr.Skew = []time.Duration{-t.Skew, t.Skew}
	}
	return b.trials
}

type trialBuilder struct {
	p      Params
	trials []Trial
}

// add adds a trial whose arrivals are the parts' (each made on demand),
// keyed UserKey when they name no key, their costs at most the limit,
// sorted stably by time: made by the trial's Build.
func (b *trialBuilder) add(family, name string, j Judge, realTime bool, parts ...func() []Arrival) *Trial {
	p := b.p
	build := func() []Arrival {
		made := make([][]Arrival, len(parts))
		n := 0
		for i, part := range parts {
			made[i] = part()
			n += len(made[i])
		}
		arr := make([]Arrival, 0, n) // exactly: a trial holds millions
		for i := range made {
			for _, a := range made[i] {
				if a.Key == "" {
					a.Key = UserKey
				}
				if a.Cost > p.Limit {
					a.Cost = p.Limit
				}
				arr = append(arr, a)
			}
			made[i] = nil
		}
		return finish(family, p, arr).Arrivals
	}
	s := Schedule{Scenario: family, Params: p}
	b.trials = append(b.trials, Trial{Family: family, Name: name, Schedule: s, Judge: j, RealTime: realTime, Build: build})
	return &b.trials[len(b.trials)-1]
}

// bu is burst made on demand.
func bu(start time.Duration, n int64, step time.Duration, c int) func() []Arrival {
	return func() []Arrival { return burst(start, n, step, c) }
}

// fixed is arrivals as a part of a trial (add copies them).
func fixed(arrivals []Arrival) func() []Arrival {
	return func() []Arrival { return arrivals }
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
