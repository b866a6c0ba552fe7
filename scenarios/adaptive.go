package scenarios

import (
	"fmt"
	"strings"
	"time"
)

// The adaptive families besides the greedy one: clients whose next request
// depends on the limiter's answers, run one call at a time in virtual time.
//
//   - cautious: a client that never asks for more than the limiter lets it
//     have (it stops a burst at the first denial, and earlier when the
//     limiter reports Remaining), so a penalty for overrunning (a key
//     blocked for a while) is never triggered until the last burst: it
//     finds the 2L-1 of a fixed window with a penalty.
//   - expiry: a client that empties the limiter, learns how long the key
//     takes to come back full (bisecting the gap between bursts), and
//     empties it again at that gap: it finds a key that expires before the
//     limiter would have refilled it.
//   - search: random restarts and hill-climbing over burst programs
//     (Search), within a budget of decisions; the schedule with the highest
//     max-in-window is kept.

// Family names of the adaptive trials of this file.
const (
	CautiousFamily = "cautious"
	ExpiryFamily   = "expiry"
	SearchFamily   = "search"
)

// AdaptiveMaxLimit is the largest limit the cautious, expiry and search
// families run at: like the greedy family, they send one call at a time.
const AdaptiveMaxLimit = GreedyMaxLimit

// AdaptiveMinWindow is the shortest window the cautious, expiry and search
// families run at. Below it their runs (many calls at one virtual instant,
// keys of a TTL of a few ms) were seen to find keys emptied by the
// key-expiry emulation, and answers that changed from run to run: false
// alarms, which a verdict must never rest on (measured: sliding-log at 1 and
// 10 ms failed now and then, at 100 ms and 1 s never).
const AdaptiveMinWindow = 100 * time.Millisecond

// Burst is one burst of a Program: up to N requests of Cost, the k-th
// (from 0) at At + k*Step.
type Burst struct {
	At   time.Duration
	N    int64
	Cost int64
	Step time.Duration
}

// Program is the plan of a burst program, an adaptive trial: its bursts in
// time order, on UserKey from client 0. Cautious: a burst stops at its
// first denial, and after an acceptance that leaves a reported Remaining
// below its Cost (a target reports Remaining once an answer said more than
// zero); after a denial with a RetryAfter, nothing is sent before it has
// passed. Not cautious: every request of every burst is sent.
type Program struct {
	Bursts   []Burst
	Cautious bool
}

// Calls is the most calls p makes: the sum of its bursts' N.
func (p Program) Calls() int {
	n := int64(0)
	for _, b := range p.Bursts {
		n += b.N
	}
	return int(n)
}

// String describes p compactly: "cautious: 19x1 at -19µs step 1µs; 20x1 at 0 step 1µs".
func (p Program) String() string {
	parts := make([]string, len(p.Bursts))
	for i, b := range p.Bursts {
		parts[i] = fmt.Sprintf("%dx%d at %s step %s", b.N, b.Cost, frac(b.At, 0), b.Step)
	}
	mode := "blind"
	if p.Cautious {
		mode = "cautious"
	}
	return mode + ": " + strings.Join(parts, "; ")
}

// Expiry is the plan of the expiry-aware client: from Start, a burst of
// cost-1 requests Step apart until the first denial (its accepted count is
// the full size); then bursts after gaps from the previous burst's last
// call, bisected geometrically between Step and MaxGap (at most
// BisectSteps, first MaxGap itself) for the shortest gap after which the
// burst gets the full size again; then bursts at that gap until End or
// MaxCalls calls. A burst sends at most Full+1 requests.
type Expiry struct {
	Start, End  time.Duration
	Step        time.Duration
	MaxGap      time.Duration
	BisectSteps int
	MaxCalls    int
}

// Search is the plan of the searching adversary: Restarts independent
// hill-climbs over burst programs, each from its own random (or built-in)
// start, seeded by Seed; together they spend at most Decisions calls. It
// keeps the program with the highest max-in-window. Resolution is the
// finest step its programs use; CanCost lets them send costs above 1.
type Search struct {
	Decisions  int64
	Restarts   int
	Seed       int64
	Resolution time.Duration
	CanCost    bool
}

// Adaptive reports whether t is an adaptive trial (greedy, cautious,
// expiry, search or a probe): run one call at a time in virtual time.
func (t Trial) Adaptive() bool {
	return t.Greedy != nil || t.Program != nil || t.Expiry != nil || t.Search != nil || t.Probe != nil
}

// MaxCalls is the most calls an adaptive trial makes (zero for others).
func (t Trial) MaxCalls() int {
	switch {
	case t.Greedy != nil:
		return t.Greedy.MaxCalls
	case t.Program != nil:
		return t.Program.Calls()
	case t.Expiry != nil:
		return t.Expiry.MaxCalls
	case t.Search != nil:
		return int(t.Search.Decisions)
	case t.Probe != nil:
		return t.Probe.Calls()
	}
	return 0
}

// resolutionOf is the finest step the families use against a target of
// resolution res (zero: unknown, taken as 1 µs).
func resolutionOf(res time.Duration) time.Duration {
	if res <= 0 {
		return time.Microsecond
	}
	return max(res, time.Microsecond)
}

// adaptiveTrial wraps an adaptive plan's first arrival (at) in a Trial, so
// that its anchor is chosen as for a schedule starting there.
func adaptiveTrial(family, name string, p Params, at time.Duration) Trial {
	s := finish(family, p, []Arrival{{At: at, Key: UserKey, Cost: 1}})
	return Trial{Family: family, Name: name, Schedule: s, Judge: Safety}
}

// CautiousTrials returns the cautious client's trials for limit p.Limit per
// p.Window against a target of resolution res: each asks, by its own count,
// for no more than the limit in the window it believes in (an aligned one,
// or one that starts at the key's first hit), the first burst ending just
// before that window ends and the last starting as it ends. None when
// p.Limit > AdaptiveMaxLimit or p.Window < AdaptiveMinWindow.
func CautiousTrials(p Params, res time.Duration) []Trial {
	L, W := p.Limit, p.Window
	if L > AdaptiveMaxLimit || L < 1 || W < AdaptiveMinWindow {
		return nil
	}
	r := resolutionOf(res)
	mk := func(name string, bursts ...Burst) Trial {
		pr := &Program{Bursts: bursts, Cautious: true}
		t := adaptiveTrial(CautiousFamily, name, p, bursts[0].At)
		t.Program = pr
		return t
	}
	before := func(end time.Duration, n int64) Burst {
		return Burst{At: end - time.Duration(n)*r, N: n, Cost: 1, Step: r}
	}
	var out []Trial
	// an aligned window: L-1 ending just before the boundary, L from it
	if L > 1 {
		out = append(out, mk("L-1 ending just before the boundary, L from it (aligned windows)",
			before(0, L-1), Burst{At: 0, N: L, Cost: 1, Step: r}))
	}
	// a window from the first hit at 0: 1 then L-1 ending just before W
	// (L in that window), L from W
	bs := []Burst{{At: 0, N: 1, Cost: 1, Step: r}}
	if L > 1 {
		bs = append(bs, before(W, L-1))
	}
	bs = append(bs, Burst{At: W, N: L, Cost: 1, Step: r})
	out = append(out, mk("first hit at 0, L-1 ending just before W, L from W (windows from the first hit)", bs...))
	return out
}

// ExpiryTrials returns the expiry-aware client's trial for limit p.Limit
// per p.Window against a target of resolution res: gaps bisected up to 2W
// (past the window and a bucket's refill time), then bursts at the found
// gap for 4 windows. None when p.Limit > AdaptiveMaxLimit or p.Window <
// AdaptiveMinWindow.
func ExpiryTrials(p Params, res time.Duration) []Trial {
	L, W := p.Limit, p.Window
	if L > AdaptiveMaxLimit || L < 1 || W < AdaptiveMinWindow {
		return nil
	}
	r := resolutionOf(res)
	e := &Expiry{Start: 0, End: 4 * W, Step: r, MaxGap: 2*W + r, BisectSteps: 24, MaxCalls: int(40*L) + 200}
	t := adaptiveTrial(ExpiryFamily, "burst until denied, wait just past the gap after which it comes back full, again", p, 0)
	t.Expiry = e
	return []Trial{t}
}

// SearchTrials returns the searching adversary's trial for limit p.Limit
// per p.Window: decisions calls in all (none when zero or negative, or when
// p.Limit > AdaptiveMaxLimit or p.Window < AdaptiveMinWindow), 4
// restarts, seeded by p.Seed.
func SearchTrials(p Params, res time.Duration, decisions int64, canCost bool) []Trial {
	if decisions <= 0 || p.Limit > AdaptiveMaxLimit || p.Limit < 1 || p.Window < AdaptiveMinWindow {
		return nil
	}
	t := adaptiveTrial(SearchFamily, "random restarts and hill-climbing over burst programs", p, -2*p.Window)
	t.Search = &Search{Decisions: decisions, Restarts: 4, Seed: p.Seed, Resolution: resolutionOf(res), CanCost: canCost}
	return []Trial{t}
}
