package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/scenarios"
)

// plan is which trials run, and on which clock.
type plan struct {
	trials []scenarios.Trial
	// virtual and real index trials: those run in virtual time (the target
	// takes an injected clock) and those run in real time.
	virtual, real []int
	// realOK: the window is short enough for the real-time families.
	realOK bool
}

// plan builds every adversarial trial for the target and sorts them by
// clock. The skew family is left out of a target that reads its own clock
// (there is no client clock to skew); the real-time trials are left out
// when the window is longer than RealTimeMax.
func (s *study) plan() plan {
	params := scenarios.Params{Limit: s.limit.Limit, Window: s.limit.Window, Seed: s.cfg.Seed}
	target := scenarios.Target{Cost: s.caps.TakesCost, Keys: s.caps.UsesKeys, Clients: s.cfg.Clients, Skew: s.cfg.skewDelta()}
	p := plan{trials: scenarios.Adversarial(params, target), realOK: s.limit.Window <= s.cfg.RealTimeMax}
	for i, t := range p.trials {
		switch {
		case t.Family == "skew" && (!s.caps.InjectsTime || readsServerTime(s.lim)):
			continue
		case s.caps.InjectsTime && !t.RealTime:
			p.virtual = append(p.virtual, i)
		case p.realOK:
			p.real = append(p.real, i)
		}
	}
	return p
}

// readsServerTime reports a script that reads Redis TIME itself (run on
// virtual time by rewriting its TIME): all its clients share the server's
// clock, so there is no client clock to skew.
func readsServerTime(lim algorithms.Limiter) bool {
	s, ok := lim.(interface{ ReadsServerTime() bool })
	return ok && s.ReadsServerTime()
}

// realClock is the clock of the real-time trials: Redis TIME for a script
// that reads it, else the harness's own wall clock (injected, or the
// endpoint's own for a key-less target).
func (s *study) realClock() harness.ClockMode {
	if s.caps.InjectsTime || !s.caps.UsesKeys {
		return harness.ClientClock
	}
	return harness.RedisClock
}

// runTrials runs the planned trials and judges each one; the result of a
// trial not run is nil. A target with keys runs its virtual and real-time
// trials at once (they use distinct keys); a key-less target (an HTTP
// endpoint: one limit for everything) runs a subset one at a time, each
// after a window of silence, so no trial sees another's traffic.
func (s *study) runTrials(ctx context.Context, p plan) ([]*trialResult, error) {
	results := make([]*trialResult, len(p.trials))
	s.progress("verify: %s, limit %s: %d virtual-time trials, %d real-time trials\n", s.lim.Name(), s.limit, len(p.virtual), len(p.real))
	if s.caps.UsesKeys {
		// the first batch to fail stops the other (a script error: at once)
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		batch := func(idx []int, clock harness.ClockMode) error {
			err := s.runBatch(ctx, p, results, idx, clock)
			if err != nil {
				cancel(err)
			}
			return err
		}
		errs := make(chan error, 1)
		go func() { errs <- batch(p.real, s.realClock()) }()
		err := batch(p.virtual, harness.VirtualClock)
		if rerr := <-errs; err == nil {
			err = rerr
		}
		return results, err
	}
	for _, i := range sequentialSubset(p.trials, p.real) {
		s.progress("verify: %s / %s\n", p.trials[i].Family, p.trials[i].Name)
		select {
		case <-ctx.Done():
		case <-time.After(s.limit.Window):
		}
		if err := s.runBatch(ctx, p, results, []int{i}, s.realClock()); err != nil {
			return results, err
		}
	}
	return results, nil
}

// runBatch runs the trials idx on clock, each on its own keys, and stores
// their judgements in results. A virtual trial that took half a window or
// more of real time may have seen keys expire (TTLs run on the real clock):
// those run again one at a time on fresh keys, and stay unjudged if still
// slow.
func (s *study) runBatch(ctx context.Context, p plan, results []*trialResult, idx []int, clock harness.ClockMode) error {
	if len(idx) == 0 {
		return nil
	}
	jobs := make([]harness.Job, len(idx))
	for k, i := range idx {
		jobs[k] = s.job(p.trials[i], fmt.Sprintf("%s%d:", s.prefix, i))
	}
	// a target on an injected clock met the boundaries in virtual time:
	// its real-time trials need not wait for one
	r := &harness.Runner{Redis: s.rdb, Clock: clock, Log: s.cfg.Log, Progress: s.cfg.Progress, Parallel: 8,
		Unaligned: s.caps.InjectsTime, Timeout: s.cfg.Timeout, MaxOutage: s.cfg.MaxOutage}
	if clock != harness.VirtualClock {
		s.progress("verify: %d real-time trials on the %s clock\n", len(idx), clock)
	}
	jrs, err := r.Execute(ctx, jobs)
	var slow []int
	for k, jr := range jrs {
		i := idx[k]
		results[i] = judge(p.trials[i], jr, s.limit, s.caps.Resolution, s.caps.InjectsTime)
		if results[i].slow {
			slow = append(slow, k)
		}
	}
	if err != nil || len(slow) == 0 {
		return err
	}
	r.Parallel = 1
	again := make([]harness.Job, len(slow))
	for n, k := range slow {
		again[n] = jobs[k]
		again[n].Prefix = fmt.Sprintf("%sretry:%d:", s.prefix, idx[k])
	}
	jrs, err = r.Execute(ctx, again)
	for n, jr := range jrs {
		i := idx[slow[n]]
		results[i] = judge(p.trials[i], jr, s.limit, s.caps.Resolution, s.caps.InjectsTime)
	}
	return err
}

// job is trial t against the target, on keys under prefix.
func (s *study) job(t scenarios.Trial, prefix string) harness.Job {
	return harness.Job{Limiter: s.lim, Limit: s.limit, Schedule: t.Schedule, Skew: t.Skew, Prefix: prefix}
}

func (s *study) progress(format string, args ...any) {
	if s.cfg.Progress != nil {
		fmt.Fprintf(s.cfg.Progress, format, args...)
	}
}

// sequentialSubset picks the trials a key-less target runs one after
// another: a few of each family (the overload liveness trial also judges
// safety, so the separate safety run is left out).
func sequentialSubset(trials []scenarios.Trial, idx []int) []int {
	quota := map[string]int{"boundary": 2, "phases": 4, "same-instant": 1, "concurrent": 1, "idle-gaps": 3}
	var out []int
	for _, i := range idx {
		t := trials[i]
		if t.Family == "overload" && t.Judge == scenarios.Liveness {
			out = append(out, i)
			continue
		}
		if quota[t.Family] > 0 {
			quota[t.Family]--
			out = append(out, i)
		}
	}
	return out
}

// IsScriptError reports whether err came from Redis running a script
// (compile or runtime error) rather than from the network.
func IsScriptError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), "script")
}
