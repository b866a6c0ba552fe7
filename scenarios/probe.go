package scenarios

import (
	"fmt"
	"time"
)

// Probe is the plan of a probing client, an adaptive trial for limiters
// that say neither when to retry nor how much is left: it learns an
// instant by bisection, each try on keys of its own, then uses it.
//
// Learn(x) is the burst program tried at x, its last burst starting at x
// and every earlier burst ending before x; x is "whole" when every request
// of that last burst is accepted, taken to be so from some instant on:
// not whole at Lo, whole at Hi. Hi is tried first (not whole: the probe
// stops there); then (lo, hi] is halved, lo the latest x found not whole
// and hi the earliest found whole, at most Steps times and while hi-lo is
// more than Res; last, Exploit(lo, hi) runs (nil: nothing more). Every
// program runs cautiously (scenarios.Program), on fresh keys, and is judged
// like any trial: the worst one is the trial's result.
type Probe struct {
	Learn   func(x time.Duration) Program
	Exploit func(lo, hi time.Duration) Program
	Lo, Hi  time.Duration
	Steps   int
	Res     time.Duration
}

// Calls is the most calls p makes: its tries of Learn (at Lo, Hi and the
// middles) and the Exploit of (Lo, Hi).
func (p Probe) Calls() int {
	n := (p.Steps + 1) * p.Learn(p.Hi).Calls()
	if p.Exploit != nil {
		n += p.Exploit(p.Lo, p.Hi).Calls()
	}
	return n
}

// ProbeSteps is how many times a Probe halves its interval: to 1/512 of it.
const ProbeSteps = 9

// ProbeTrials returns the probing client's trials for limit p.Limit per
// p.Window against a target of resolution res (none when p.Limit < 2, p.Limit >
// AdaptiveMaxLimit or p.Window < AdaptiveMinWindow):
//
//   - cautious: the end of a window that starts at a key's first hit,
//     found without overrunning it. Learn(x) is one request at 0 and L from
//     x: whole once x is past that window (a window of any length up to
//     2W), and before it the L-th request overruns (on a key of its own, so
//     a block or penalty costs nothing). Exploit(lo, hi) is one request at
//     0, L-1 ending at lo (the window then holds L: never overrun), L from
//     hi plus a burst's length (the whole burst at hi may have begun before
//     the window's end): 2L-1 within hi-lo and three bursts' length, when
//     the limiter starts afresh at the end of a first-hit window.
//   - greedy: how soon after a full window a two-window weighted counter
//     admits a whole burst again, as the previous window's weight decays
//     (a counter that counts denied requests too cannot be found by retrying
//     on its key). Learn(x) is L ending just before an aligned boundary and
//     L from x, x up to W less both bursts and a step (a window judged at
//     the limiter's resolution is one step shorter): whole at such an x is
//     2L within one window.
func ProbeTrials(p Params, res time.Duration) []Trial {
	L, W := p.Limit, p.Window
	if L < 2 || L > AdaptiveMaxLimit || W < AdaptiveMinWindow {
		return nil
	}
	r := resolutionOf(res)
	span := time.Duration(L) * r // a burst of L, r apart, and the step after it
	burst := func(at time.Duration, n int64) Burst { return Burst{At: at, N: n, Cost: 1, Step: r} }
	var out []Trial
	mk := func(family, name string, pr *Probe, first time.Duration) {
		pr.Steps, pr.Res = ProbeSteps, r
		t := adaptiveTrial(family, name, p, first)
		t.Probe = pr
		out = append(out, t)
	}
	firstHit := &Probe{Lo: 0, Hi: 2 * W,
		Learn: func(x time.Duration) Program {
			return Program{Cautious: true, Bursts: []Burst{burst(0, 1), burst(x, L)}}
		},
		Exploit: func(lo, hi time.Duration) Program {
			return Program{Cautious: true, Bursts: []Burst{burst(0, 1), burst(max(lo-span+2*r, r), L-1), burst(hi+span-r, L)}}
		}}
	mk(CautiousFamily, "first hit at 0, L from x: x bisected for the window's end; then L-1 ending there, L after", firstHit, 0)
	if hi := W - 2*span - r; hi > 0 {
		weighted := &Probe{Lo: 0, Hi: hi,
			Learn: func(x time.Duration) Program {
				return Program{Cautious: true, Bursts: []Burst{burst(-span, L), burst(x, L)}}
			}}
		mk(GreedyFamily, fmt.Sprintf("L ending before the boundary, L from x <= %s: x bisected for the earliest whole burst", frac(hi, W)), weighted, -span)
	}
	return out
}
