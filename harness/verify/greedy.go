package verify

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/scenarios"
)

// runGreedy runs the adaptive trials p.greedy (greedy, cautious, expiry,
// search, probes) side by side, each one call at a time in virtual time (their
// arrivals depend on the answers), and stores their judgements in results.
func (s *study) runGreedy(ctx context.Context, p plan, results []*trialResult) error {
	var wg sync.WaitGroup
	errs := make([]error, len(p.greedy))
	for k, i := range p.greedy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := p.trials[i]
			switch {
			case t.Search != nil:
				results[i], errs[k] = s.runSearch(ctx, t, fmt.Sprintf("%s%d:", s.prefix, i))
				return
			case t.Probe != nil:
				results[i], errs[k] = s.runProbe(ctx, t, fmt.Sprintf("%s%d:", s.prefix, i))
				return
			}
			var got harness.Collector
			job := s.job(t, fmt.Sprintf("%s%d:", s.prefix, i))
			job.Sink = &got
			jr, err := s.runner(harness.VirtualClock).Adaptive(ctx, job, s.client(t))
			errs[k] = err
			results[i] = s.judge(t, ranOf(jr.Anchor, got.Outcomes), nil, true)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// client is the next function (harness.Runner.Adaptive's) of adaptive trial
// t: a fresh client for each run.
func (s *study) client(t scenarios.Trial) func(*harness.Outcome) (scenarios.Arrival, bool) {
	res := max(s.caps.Resolution, time.Microsecond)
	switch {
	case t.Program != nil:
		return (&programClient{prog: *t.Program}).next
	case t.Expiry != nil:
		return (&expiryClient{plan: *t.Expiry}).next
	}
	g := &greedy{plan: *t.Greedy, limit: t.Schedule.Params.Limit, window: t.Schedule.Params.Window, res: res}
	return g.next
}

// greedy is the state of one greedy adversary (scenarios.Greedy): it looks
// for the earliest instant after each denial at which the limiter admits a
// request, from the limiter's own RetryAfter (one emission interval W/L without one),
// checked by bisection.
type greedy struct {
	plan        scenarios.Greedy
	limit       int64
	window, res time.Duration
	calls       int
	lo, hi      time.Duration // after a denial at lo: the earliest pass is in (lo, hi]
	steps       int           // bisection probes left in (lo, hi]
	hinted      bool          // (lo, hi] is being searched
}

// next is harness.Runner.Adaptive's next function.
func (g *greedy) next(last *harness.Outcome) (scenarios.Arrival, bool) {
	at := g.plan.Start
	if last != nil {
		at = g.after(last)
	}
	g.calls++
	if g.calls > g.plan.MaxCalls || at >= g.plan.End {
		return scenarios.Arrival{}, false
	}
	return scenarios.Arrival{At: at, Key: scenarios.UserKey, Cost: 1}, true
}

// after picks the next instant from the last answer.
func (g *greedy) after(o *harness.Outcome) time.Duration {
	t := o.Arrival.At
	if o.Err != nil {
		return t + g.window/time.Duration(g.limit) // no answer: move on by one emission interval
	}
	if o.Decision.Allowed {
		g.hinted = false
		return t // the same instant again
	}
	if !g.hinted || t >= g.hi {
		// a fresh denial: the limiter's retry, or one emission interval
		g.lo, g.hinted, g.steps = t, true, g.plan.BisectSteps
		g.hi = t + o.Decision.RetryAfter
		if o.Decision.RetryAfter <= 0 {
			g.hi = t + max(g.window/time.Duration(g.limit), g.res)
		}
		if t >= g.hi { // a denial at the hinted instant itself
			g.hi = t + max(g.hi-g.lo, g.res)
		}
	} else {
		g.lo = t // denied inside (lo, hi]
	}
	if g.steps > 0 && g.hi-g.lo > g.res {
		g.steps--
		mid := g.lo + (g.hi-g.lo)/2
		return max(mid-mid%g.res, g.lo+g.res)
	}
	return g.hi
}

// programClient runs a scenarios.Program: its bursts in order; when
// cautious, a burst stops at its first denial, or after an acceptance that
// leaves a reported Remaining below the burst's cost, and nothing is sent
// before a denial's RetryAfter has passed.
type programClient struct {
	prog scenarios.Program
	b    int   // the current burst
	k    int64 // requests of it sent
	// remaining: the target reports Remaining (an answer said > 0)
	remaining bool
	notBefore time.Duration // no request before it (a RetryAfter; the last one sent)
}

// next is harness.Runner.Adaptive's next function.
func (c *programClient) next(last *harness.Outcome) (scenarios.Arrival, bool) {
	if last == nil {
		c.notBefore = math.MinInt64 // the program may start before the anchor
	}
	if last != nil {
		c.k++
		c.notBefore = max(c.notBefore, last.Arrival.At)
		if c.prog.Cautious && last.Err == nil {
			d := last.Decision
			c.remaining = c.remaining || d.Remaining > 0
			switch {
			case !d.Allowed:
				c.b, c.k = c.b+1, 0 // never ask again in a burst that was told no
				if d.RetryAfter > 0 {
					c.notBefore = max(c.notBefore, last.Arrival.At+d.RetryAfter)
				}
			case c.remaining && c.b < len(c.prog.Bursts) && d.Remaining < c.prog.Bursts[c.b].Cost:
				c.b, c.k = c.b+1, 0 // the limiter says the next one would not fit
			}
		}
	}
	for c.b < len(c.prog.Bursts) {
		bu := c.prog.Bursts[c.b]
		if c.k >= bu.N {
			c.b, c.k = c.b+1, 0
			continue
		}
		at := max(bu.At+time.Duration(c.k)*bu.Step, c.notBefore)
		return scenarios.Arrival{At: at, Key: scenarios.UserKey, Cost: max(bu.Cost, 1)}, true
	}
	return scenarios.Arrival{}, false
}

// expiryClient runs a scenarios.Expiry: a first burst until denied (full
// is what it got), then bursts after bisected gaps until the shortest gap
// after which a burst gets full again is known, then bursts at that gap.
type expiryClient struct {
	plan  scenarios.Expiry
	calls int
	// the current burst: its first request's time, requests sent, cost accepted
	start time.Duration
	k     int64
	got   int64
	full  int64 // accepted by the first burst; 0 while it runs
	first bool  // the first burst is done
	// lo, hi: a burst after lo was not full, after hi it was (hi 0: MaxGap untried)
	lo, hi time.Duration
	steps  int
	gap    time.Duration // the gap of the current burst (0: the first)
	repeat bool          // bisection done: bursts at hi
}

// next is harness.Runner.Adaptive's next function.
func (c *expiryClient) next(last *harness.Outcome) (scenarios.Arrival, bool) {
	at := c.plan.Start
	switch {
	case last == nil:
		c.start = at
	case c.burstGoesOn(last):
		at = c.start + time.Duration(c.k)*c.plan.Step
	default:
		gap, ok := c.burstDone()
		if !ok {
			return scenarios.Arrival{}, false
		}
		c.gap = gap
		at = last.Arrival.At + gap
		c.start, c.k, c.got = at, 0, 0
	}
	c.calls++
	if c.calls > c.plan.MaxCalls || at >= c.plan.End {
		return scenarios.Arrival{}, false
	}
	c.k++
	return scenarios.Arrival{At: at, Key: scenarios.UserKey, Cost: 1}, true
}

// burstGoesOn records the answer last and reports whether the current
// burst sends another request: until the first denial (or error), and a
// later burst at most 2*full+1 requests.
func (c *expiryClient) burstGoesOn(last *harness.Outcome) bool {
	if last.Err != nil || !last.Decision.Allowed {
		return false
	}
	c.got += last.Arrival.Cost
	if !c.first {
		return c.k < int64(c.plan.MaxCalls)/4
	}
	return c.k <= 2*c.full
}

// burstDone judges the burst that just ended and returns the gap before the
// next one; false: stop (nothing came back full after MaxGap, or the first
// burst got nothing).
func (c *expiryClient) burstDone() (time.Duration, bool) {
	if !c.first {
		c.first, c.full = true, c.got
		return c.plan.MaxGap, c.full > 0
	}
	if c.repeat {
		return c.hi, true
	}
	full := c.got >= c.full
	if c.hi == 0 { // the burst after MaxGap
		if !full {
			return 0, false
		}
		c.lo, c.hi, c.steps = c.plan.Step, c.plan.MaxGap, c.plan.BisectSteps
	} else if full {
		c.hi = c.gap
	} else {
		c.lo = c.gap
	}
	// geometric bisection of (lo, hi] down to 1/64 of it or one step
	if c.steps > 0 && c.hi-c.lo > c.plan.Step && float64(c.hi) > float64(c.lo)*(1+1.0/64) {
		c.steps--
		mid := time.Duration(math.Sqrt(float64(c.lo) * float64(c.hi)))
		return max(mid.Truncate(c.plan.Step), c.lo+c.plan.Step), true
	}
	c.repeat = true
	return c.hi, true
}
