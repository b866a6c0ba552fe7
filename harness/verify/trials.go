package verify

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"iter"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

// plan is which trials run, and on which clock.
type plan struct {
	trials []scenarios.Trial
	// virtual and real index trials: those run in virtual time (the target
	// takes an injected clock) and those run in real time (the target reads
	// its own clock; or, with Config.RealTime, the families that exercise
	// key TTLs and real concurrency, again as a confirmation). greedy are
	// the adaptive trials (virtual time, one call at a time).
	virtual, real, greedy []int
	// realOK: the window is short enough for the real-time families.
	realOK bool
	// ttlSkipped: the target sets absolute key expiries, which virtual time
	// cannot emulate: the TTL families are left out of virtual time.
	ttlSkipped bool
	// shapes are the trials' arrivals in brief (by trial): the trials
	// make theirs on demand (scenarios.Trial.Build), when they run.
	shapes []shape
}

// shape is a trial's arrivals in brief: how many (calls; on
// scenarios.IsolationKey: isolated), their cost units, first and last
// times, and a digest of them all (sameSchedule).
type shape struct {
	calls, isolated int
	units           int64
	first, last     time.Duration
	digest          uint64
}

// shapeOf is arrivals in brief; seed keys the digest (one per plan).
func shapeOf(arrivals iter.Seq[scenarios.Arrival], seed maphash.Seed) shape {
	var sh shape
	var h maphash.Hash
	h.SetSeed(seed)
	var buf [8 * 3]byte
	for a := range arrivals {
		if sh.calls == 0 {
			sh.first = a.At
		}
		sh.calls++
		sh.last = a.At
		sh.units += max(a.Cost, 1)
		if a.Key == scenarios.IsolationKey {
			sh.isolated++
		}
		binary.LittleEndian.PutUint64(buf[0:], uint64(a.At))
		binary.LittleEndian.PutUint64(buf[8:], uint64(a.Cost))
		binary.LittleEndian.PutUint64(buf[16:], uint64(a.Client))
		_, _ = h.Write(buf[:])
		_, _ = h.WriteString(a.Key)
		_ = h.WriteByte(0)
	}
	sh.digest = h.Sum64()
	return sh
}

// ttlFamily reports whether family fam is there to exercise key TTLs.
func ttlFamily(fam string) bool { return fam == "idle-gaps" }

// plan builds every adversarial trial for the target, for each of its
// limits, and sorts them by clock. A target that takes an injected clock
// runs every trial in virtual time (key TTLs emulated on it); with RealTime
// its real-time trials also run in real time, on the wall clock. So does a
// script that reads no clock (study.expiryClock), without the skew family
// (it has no client clock). A target
// that reads its own clock runs in real time only: no skew family (there
// is no client clock to skew), no adaptive trials, and nothing when the
// window is longer than RealTimeMax.
func (s *study) plan() plan {
	// absolute expiries are emulated with the TTLs (harness.Runner.Expiry)
	p := plan{realOK: s.limit.Window <= s.cfg.RealTimeMax, ttlSkipped: len(s.absolute) > 0 && !s.emulated()}
	attack := scenarios.Attack{Cost: s.caps.TakesCost, Keys: s.caps.UsesKeys, Clients: s.cfg.Clients, Skew: s.cfg.skewDelta(),
		Resolution: s.caps.Resolution, SearchDecisions: s.cfg.searchDecisions()}
	if s.expiryClock {
		attack.Step = s.caps.Resolution // key expiry's ms: a first-hit window ends a ms after probe+W
	}
	for k, l := range s.limits {
		params := scenarios.Params{Limit: l.Count, Window: l.Window, Seed: s.cfg.Seed}
		for _, t := range scenarios.AdversarialPlan(params, attack) {
			if len(s.limits) > 1 {
				t.Name = fmt.Sprintf("[%s] %s", l, t.Name)
			}
			if k > 0 && t.Family == "skew" {
				continue // one skew probe: the first limit's
			}
			p.trials = append(p.trials, t)
		}
	}
	// a cost above the smallest limit can never fit: the larger limits'
	// weighted trials are sent at most that
	least := s.limit.Count
	for _, l := range s.limits {
		least = min(least, l.Count)
	}
	for i := range p.trials {
		p.trials[i] = atMost(p.trials[i], least)
	}
	seed := maphash.MakeSeed()
	p.shapes = make([]shape, len(p.trials))
	for i, t := range p.trials {
		p.shapes[i] = shapeOf(t.Each(), seed) // one trial's arrivals at a time, or streamed
	}
	for i, t := range p.trials {
		switch {
		case t.Family == "skew" && (!s.caps.InjectsTime || s.expiryClock || readsRedisTime(s.lim)):
			continue
		case !s.caps.InjectsTime:
			if t.Adaptive() || t.Family == scenarios.DenseFamily || !p.realOK {
				continue
			}
			p.real = append(p.real, i)
		case t.Adaptive():
			if s.rdb != nil || !s.caps.UsesKeys {
				p.greedy = append(p.greedy, i)
			}
		default:
			if !(p.ttlSkipped && ttlFamily(t.Family)) {
				p.virtual = append(p.virtual, i)
			}
			if s.cfg.RealTime && t.RealTime && p.realOK {
				p.real = append(p.real, i)
			}
		}
	}
	return p
}

// atMost is trial t with its costs at most least.
func atMost(t scenarios.Trial, least int64) scenarios.Trial {
	clamp := func(arrivals []scenarios.Arrival) []scenarios.Arrival {
		for k := range arrivals {
			arrivals[k].Cost = min(arrivals[k].Cost, least)
		}
		return arrivals
	}
	if build := t.Build; build != nil {
		t.Build = func() []scenarios.Arrival { return clamp(build()) }
		t.Stream = clampSeq(t.Stream, least)
		return t
	}
	clamp(t.Schedule.Arrivals)
	return t
}

// readsRedisTime reports a script that reads Redis TIME itself (run on
// virtual time by rewriting its TIME): all its clients share the server's
// clock, so there is no client clock to skew.
func readsRedisTime(lim algorithms.Limiter) bool {
	s, ok := lim.(interface{ ReadsRedisTime() bool })
	return ok && s.ReadsRedisTime()
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

// results holds the judgements of one verification: per trial, in virtual
// and in real time (nil: not run on that clock).
type results struct {
	virtual, real []*trialResult
}

// runTrials runs the planned trials and judges each one. A target with
// keys runs its virtual, adaptive and real-time trials at once (they use
// distinct keys: runBatch); a key-less target (an HTTP endpoint: one limit for
// everything) runs a subset one at a time, each after a window of silence,
// so no trial sees another's traffic.
func (s *study) runTrials(ctx context.Context, p plan) (results, error) {
	res := results{virtual: make([]*trialResult, len(p.trials)), real: make([]*trialResult, len(p.trials))}
	s.progress("verify: %s, limit %s: %d virtual-time trials, %d adaptive, %d real-time trials\n",
		s.lim.Name(), s.limitsDesc(), len(p.virtual), len(p.greedy), len(p.real))
	if s.caps.UsesKeys {
		// the first batch to fail stops the others (a script error: at once)
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := func(err error) error {
			if err != nil {
				cancel(err)
			}
			return err
		}
		errs := make(chan error, 2)
		go func() { errs <- stop(s.runBatch(ctx, p, res.real, p.real, s.realClock())) }()
		go func() { errs <- stop(s.runGreedy(ctx, p, res.virtual)) }()
		err := stop(s.runBatch(ctx, p, res.virtual, p.virtual, harness.VirtualClock))
		for range 2 {
			if e := <-errs; err == nil {
				err = e
			}
		}
		return res, err
	}
	for _, i := range sequentialSubset(p.trials, p.real) {
		s.progress("verify: %s / %s\n", p.trials[i].Family, p.trials[i].Name)
		select {
		case <-ctx.Done():
		case <-time.After(s.limit.Window):
		}
		if err := s.runBatch(ctx, p, res.real, []int{i}, s.realClock()); err != nil {
			return res, err
		}
	}
	return res, nil
}

// virtualPipeline is how many calls a virtual-time trial sends per round
// trip, and virtualParallel how many trials run side by side.
const (
	virtualPipeline = 256
	virtualParallel = 4
)

// runBatch runs the trials idx on clock, each on its own keys, and stores
// their judgements in results. In virtual time the calls are pipelined and
// key TTLs run on the virtual clock (harness.Runner.Pipeline, Expiry), and
// isolation trials run a control beside them: the same requests on a fresh
// key alone; the safety trials' mostly denied bursts are thinned (thinned:
// their results hold only what was sent). A target without Redis keys (or not algorithms.Scripted) in
// virtual time goes one call at a time with real TTLs: a trial that took
// half a window or more of real time is run again alone, and stays
// unjudged if still slow.
func (s *study) runBatch(ctx context.Context, p plan, results []*trialResult, idx []int, clock harness.ClockMode) error {
	if len(idx) == 0 {
		return nil
	}
	virtual := clock == harness.VirtualClock
	// a trial of a family run on both clocks is in the virtual batch and
	// in the real-time one, which run at once: each run has keys of its own
	// (under one prefix, the virtual run's key-expiry emulation removed the
	// real run's log mid-trial: a correct sliding-log was VIOLATED)
	prefix := s.prefix
	if !virtual {
		prefix += "rt:"
	}
	jobs := make([]harness.Job, 0, len(idx))
	judged := map[int]*judgement{} // trial -> its judgement, its job's Sink
	var distinct []int             // trials with a job of their own
	var sinks []fanOut             // by job
	jobOf := map[int]int{}         // trial -> its job
next:
	for _, i := range idx {
		judged[i] = s.judgement(p.trials[i], virtual, virtual && p.trials[i].Judge == scenarios.Isolation)
		for k, j := range distinct {
			if virtual && sameSchedule(p, j, i) {
				sinks[k] = append(sinks[k], judged[i]) // overload's safety and liveness: run once, judged twice
				jobs[k].Thin = jobs[k].Thin && s.thinned(p.trials[i])
				jobOf[i] = k
				continue next
			}
		}
		distinct = append(distinct, i)
		sinks = append(sinks, fanOut{judged[i]})
		jobs = append(jobs, s.job(p.trials[i], fmt.Sprintf("%s%d:", prefix, i)))
		jobOf[i] = len(jobs) - 1
		jobs[len(jobs)-1].Thin = virtual && s.thinned(p.trials[i])
		jobs[len(jobs)-1].Calls = p.shapes[i].calls
	}
	for k := range jobs {
		jobs[k].Sink = sinks[k]
	}
	for _, i := range idx {
		if c := judged[i].control; c != nil {
			job := s.job(isolationControl(p.trials[i]), fmt.Sprintf("%s%d:control:", prefix, i))
			job.Sink, job.Calls = c, p.shapes[i].isolated
			jobs = append(jobs, job)
		}
	}
	r := s.runner(clock)
	if !virtual {
		s.progress("verify: %d real-time trials on the %s clock\n", len(idx), clock)
	}
	jrs, err := r.Execute(ctx, jobs)
	if kerr := r.Settle(); kerr != nil { // a script that never returned was killed: say so, never leave Redis BUSY
		err = kerr
	}
	var slow []int
	for _, i := range idx {
		if len(jrs) < len(jobs) {
			break // no run (a real-time anchor that could not be read)
		}
		results[i] = judged[i].finish()
		results[i].skipped = jrs[jobOf[i]].Skipped
		results[i].shared = distinct[jobOf[i]] != i
		if results[i].slow {
			slow = append(slow, i)
		}
	}
	if err != nil || len(slow) == 0 {
		return err
	}
	r.Parallel = 1
	again := make([]harness.Job, len(slow))
	for n, i := range slow {
		judged[i] = s.judgement(p.trials[i], virtual, false)
		again[n] = s.job(p.trials[i], fmt.Sprintf("%sretry:%d:", prefix, i))
		again[n].Sink, again[n].Calls = judged[i], p.shapes[i].calls
	}
	jrs, err = r.Execute(ctx, again)
	for n := range jrs {
		i := slow[n]
		results[i] = judged[i].finish()
	}
	return err
}

// ThinMinLimit is the smallest limit whose trials are thinned
// (harness.Job.Thin: a burst mostly denied is probed, not sent whole);
// under it every trial sends every request.
const ThinMinLimit = 1000

// thinned reports whether trial t's bursts are thinned in virtual time:
// a safety trial of a burst family (not the dense stream: its point is
// every phase), at a limit of ThinMinLimit or more, unless
// Config.FullBursts. Liveness and isolation trials (and the controls),
// the adaptive families and real-time runs send every request.
func (s *study) thinned(t scenarios.Trial) bool {
	return !s.cfg.FullBursts && t.Judge == scenarios.Safety && t.Family != scenarios.DenseFamily && !t.Adaptive() &&
		t.Schedule.Params.Limit >= ThinMinLimit
}

// runner is the harness.Runner of the trials on clock.
func (s *study) runner(clock harness.ClockMode) *harness.Runner {
	// a target on an injected clock met the boundaries in virtual time:
	// its real-time trials need not wait for one
	r := &harness.Runner{Redis: s.rdb, Clock: clock, Log: s.cfg.Log, Progress: s.cfg.Progress, Parallel: 8,
		Unaligned: s.caps.InjectsTime, Timeout: s.cfg.Timeout, AdaptTimeout: s.cfg.AdaptTimeout, MaxOutage: s.cfg.MaxOutage,
		Label: "verify " + s.lim.Name()}
	if clock == harness.VirtualClock && s.rdb != nil {
		// a trial's keys go when it is judged: Redis holds those of the
		// trials under way (nothing reads them later: replays use fresh keys)
		r.Pipeline, r.Expiry, r.Parallel = virtualPipeline, true, virtualParallel
		r.DropKeys = []string{scenarios.UserKey, scenarios.IsolationKey} // every trial's arrival keys
	}
	return r
}

// emulated reports whether virtual trials run with key TTLs on the virtual
// clock (so their real duration does not matter).
func (s *study) emulated() bool {
	_, ok := s.lim.(algorithms.Scripted)
	_, clientSide := s.lim.(custom.Gated) // its own virtual TTLs (the VM's, an exec target's endpoint)
	return (ok || clientSide) && s.rdb != nil
}

// isolationControl is the control of isolation trial t: its requests on
// scenarios.IsolationKey alone, at the same times, on keys of their own.
func isolationControl(t scenarios.Trial) scenarios.Trial {
	alone := func(arrivals []scenarios.Arrival) []scenarios.Arrival {
		var out []scenarios.Arrival
		for _, a := range arrivals {
			if a.Key == scenarios.IsolationKey {
				out = append(out, a)
			}
		}
		return out
	}
	c := t
	if build := t.Build; build != nil {
		c.Build = func() []scenarios.Arrival { return alone(build()) }
		c.Stream = aloneSeq(t.Stream)
		return c
	}
	c.Schedule.Arrivals = alone(t.Schedule.Arrivals)
	return c
}

// job is trial t against the target, on keys under prefix.
func (s *study) job(t scenarios.Trial, prefix string) harness.Job {
	l := limit.Limit{Count: t.Schedule.Params.Limit, Window: t.Schedule.Params.Window}
	return harness.Job{Limiter: s.lim, Limit: l, Scenario: t.Schedule.Scenario, Arrivals: t.Each(), Calls: len(t.Schedule.Arrivals),
		Skew: t.Skew, Prefix: prefix}
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

// sameSchedule reports whether trials a and b of p send the same
// arrivals the same way (same family, no skew, the same arrivals by their
// digest), so one run can be judged for both.
func sameSchedule(p plan, a, b int) bool {
	ta, tb := p.trials[a], p.trials[b]
	return ta.Family == tb.Family && len(ta.Skew) == 0 && len(tb.Skew) == 0 && p.shapes[a] == p.shapes[b]
}
