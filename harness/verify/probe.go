package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/scenarios"
)

// The probing client (scenarios.Probe): where a limiter reports no
// RetryAfter and no Remaining, the instant it admits again is found by
// trying, each try a burst program on keys of its own (so a denied try
// leaves nothing behind: no block, no denied request counted against the
// next try), and bisecting. Every try is judged like a trial; the worst
// is the trial's result, its decisions those of every try.

// probeRun is one probe trial under way.
type probeRun struct {
	s      *study
	t      scenarios.Trial
	prefix string
	n      int // programs run
	best   *trialResult
	tally  // every program's decisions and errors, and the first errors
}

// runProbe runs probe trial t on keys under prefix and returns the
// judgement of its worst program, with every program's decisions and
// errors counted. An error stops it (a cancelled ctx, an outage).
func (s *study) runProbe(ctx context.Context, t scenarios.Trial, prefix string) (*trialResult, error) {
	pr := &probeRun{s: s, t: t, prefix: prefix}
	p := *t.Probe
	lo, hi := p.Lo, p.Hi
	whole, err := pr.learn(ctx, p, hi)
	if err != nil || !whole {
		return pr.result(), err
	}
	for range p.Steps {
		if hi-lo <= p.Res {
			break
		}
		mid := lo + (hi-lo)/2
		mid -= mid % p.Res
		if mid <= lo {
			mid = lo + p.Res
		}
		whole, err := pr.learn(ctx, p, mid)
		if err != nil {
			return pr.result(), err
		}
		if whole {
			hi = mid
		} else {
			lo = mid
		}
	}
	if p.Exploit != nil {
		if _, err := pr.run(ctx, p.Exploit(lo, hi)); err != nil {
			return pr.result(), err
		}
	}
	return pr.result(), nil
}

// learn runs p.Learn(x) and reports whether its last burst was accepted
// whole.
func (pr *probeRun) learn(ctx context.Context, p scenarios.Probe, x time.Duration) (bool, error) {
	prog := p.Learn(x)
	jr, err := pr.run(ctx, prog)
	if err != nil || len(prog.Bursts) == 0 {
		return false, err
	}
	last := prog.Bursts[len(prog.Bursts)-1]
	var got int64
	for _, o := range jr.outcomes {
		if o.Arrival.At >= x && o.Err == nil && o.Decision.Allowed {
			got += o.Arrival.Cost
		}
	}
	return got >= last.N*max(last.Cost, 1), nil
}

// run runs prog as a trial of t's family on keys of its own, judges it and
// keeps the worst judgement.
func (pr *probeRun) run(ctx context.Context, prog scenarios.Program) (ran, error) {
	jr, tr, err := pr.s.runProgram(ctx, pr.t, prog, fmt.Sprintf("%sp%d:", pr.prefix, pr.n))
	pr.n++
	if err != nil {
		return jr, err
	}
	pr.add(tr)
	if pr.best == nil || tr.ratio > pr.best.ratio {
		pr.best = tr
	}
	return jr, nil
}

// result is the worst judgement, with every program's decisions and
// errors; nil when no program ran.
func (pr *probeRun) result() *trialResult {
	if pr.best == nil {
		return nil
	}
	tr := *pr.best
	tr.decisions, tr.errors, tr.errorSamples = pr.decisions, pr.errors, pr.samples
	return &tr
}
