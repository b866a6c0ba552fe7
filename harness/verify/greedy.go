package verify

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/scenarios"
)

// runGreedy runs the adaptive trials p.greedy side by side, each one call at
// a time in virtual time (their arrivals depend on the answers), and stores
// their judgements in results.
func (s *study) runGreedy(ctx context.Context, p plan, results []*trialResult) error {
	var wg sync.WaitGroup
	errs := make([]error, len(p.greedy))
	for k, i := range p.greedy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := p.trials[i]
			job := s.job(t, fmt.Sprintf("%s%d:", s.prefix, i))
			g := &greedy{plan: *t.Greedy, limit: t.Schedule.Params.Limit, window: t.Schedule.Params.Window,
				res: max(s.caps.Resolution, time.Microsecond)}
			jr, err := s.runner(harness.VirtualClock).Adaptive(ctx, job, g.next)
			errs[k] = err
			results[i] = s.judge(t, jr, nil, true)
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
