// Package demo is the study behind `ratelab demo`: seed 001's boundary
// burst, live on the Redis server's clock, told to an Observer as it
// happens (Config, Validate, Run).
package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/targets"
)

// Scenario is the schedule `ratelab demo` shows: seed 001's harness, a
// full burst of L just before a window boundary and another just after.
const Scenario = "boundary-burst"

// DefaultLimit is the demo's default limit: boundary-burst's own 50,
// per 10 s.
var DefaultLimit = limit.Limit{Count: 50, Window: 10 * time.Second}

// DefaultLead is the demo's default countdown: at least one second
// before the first burst.
const DefaultLead = time.Second

// Config is what `ratelab demo` runs.
type Config struct {
	// Algorithms are registry names; empty means all.
	Algorithms []string
	// Limit is the limit shown: Count is also the size of each burst
	// (1..1000), Window in 100ms..10m (a live show); the zero Limit means
	// DefaultLimit. Precision reaches bucketed-hash only.
	Limit limit.Limit
	// Lead is the shortest countdown before the first burst; zero means
	// DefaultLead. The demo parks until the first window boundary on
	// the Redis server's clock that leaves at least Lead before the burst
	// ahead of it, so it waits between Lead and Lead + Window.
	Lead time.Duration
	// RunID names the key prefix "ratelab:<RunID>:"; empty picks a fresh one.
	RunID string
	// Pace slows each burst down for a class to watch: its requests come
	// Pace times further apart (20: 50 requests over about 1 s instead of
	// 50 ms), each burst still starting at its time; the bursts' times and
	// so the window they straddle do not change. Zero means 1 (live
	// speed); at most MaxPace(Limit): the burst before the boundary must
	// end before it.
	Pace float64
	// Progress is told the keys the demo could not remove (a Redis that
	// hangs, Ctrl-C) and the command that removes them; nil says nothing.
	Progress io.Writer
}

// MaxPace is the largest Config.Pace for l (the zero Limit means
// DefaultLimit): the burst before the boundary, stretched, still ends
// before it. It is 1 when the schedule has no burst before the boundary to
// stretch.
func MaxPace(l limit.Limit) float64 {
	if l == (limit.Limit{}) {
		l = DefaultLimit
	}
	sc, err := scenarios.Get(Scenario)
	if err != nil {
		return 1
	}
	arr := sc.Build(scenarios.Params{Limit: l.Count, Window: l.Window}).Arrivals
	if len(arr) < 2 || arr[0].At >= 0 {
		return 1
	}
	last := 0
	for last+1 < len(arr) && arr[last+1].At < 0 {
		last++
	}
	span := arr[last].At - arr[0].At
	if span <= 0 {
		return 1000
	}
	// -first burst start + span*pace < 0, with 1% to spare
	return min(1000, math.Floor(0.99*float64(-arr[0].At)/float64(span)*10)/10)
}

// Paced returns arrivals with each burst (a run of arrivals on one side of
// the boundary) stretched pace times from its first arrival; pace <= 1
// returns arrivals as they are. arrivals are sorted by At.
func Paced(arrivals []scenarios.Arrival, pace float64) []scenarios.Arrival {
	if pace <= 1 || len(arrivals) == 0 {
		return arrivals
	}
	out := make([]scenarios.Arrival, len(arrivals))
	start := arrivals[0].At
	for i, a := range arrivals {
		if i > 0 && (arrivals[i-1].At < 0) != (a.At < 0) {
			start = a.At
		}
		a.At = start + time.Duration(float64(a.At-start)*pace)
		out[i] = a
	}
	return out
}

// Validate checks cfg and returns an error naming the field: algorithms
// registered; Limit zero (the default) or valid (limit.Limit.Validate)
// with Count <= 1000 (two bursts of Count requests are sent live) and
// Window in 100ms..10m (a live show); Lead >= 0; Pace zero or in
// 1..MaxPace(Limit).
func (cfg Config) Validate() error {
	if err := targets.CheckAlgorithms(cfg.Algorithms); err != nil {
		return &field.Error{Name: "algorithms", Err: err}
	}
	l := cfg.WithDefaults().Limit
	if err := l.Validate(); err != nil {
		return err
	}
	switch {
	case l.Count > 1000:
		return field.Errorf("limit", "at most 1000 for a demo (two bursts of limit requests), got %d", l.Count)
	case l.Window < 100*time.Millisecond:
		return field.Errorf("window", "must be >= 100ms, got %s", limit.FormatWindow(l.Window))
	case l.Window > 10*time.Minute:
		return field.Errorf("window", "at most 10m for a live demo, got %s", limit.FormatWindow(l.Window))
	case cfg.Lead < 0:
		return field.Errorf("lead", "must be >= 0, got %s", cfg.Lead)
	case cfg.Pace < 0 || (cfg.Pace > 0 && cfg.Pace < 1) || math.IsNaN(cfg.Pace):
		return field.Errorf("pace", "must be >= 1 (1: live speed), got %g", cfg.Pace)
	case cfg.Pace > MaxPace(l):
		return field.Errorf("pace", "at most %gx for %d per %s: the burst before the boundary, slowed %gx, would reach it",
			MaxPace(l), l.Count, limit.FormatWindow(l.Window), cfg.Pace)
	}
	return nil
}

// WithDefaults returns cfg with its zero fields set to the defaults: all
// algorithms, DefaultLimit, DefaultLead. Validate and Run call it.
func (cfg Config) WithDefaults() Config {
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = algorithms.Names()
	}
	if cfg.Limit == (limit.Limit{}) {
		cfg.Limit = DefaultLimit
	}
	if cfg.Lead <= 0 {
		cfg.Lead = DefaultLead
	}
	return cfg
}

// Observer is told what the demo does, as it happens. Decided is told each
// decision as the line decisions.jsonl gets (DecidedAtUS on the Redis
// server's clock, RecvUS on the local one: DemoPlan.Offset relates them),
// with algorithm indexing DemoPlan.Algorithms; it is called from several
// goroutines at once.
type Observer interface {
	Planned(p measure.DemoPlan)
	Decided(algorithm int, r measure.Record)
}

// Run runs seed 001's boundary burst in real time on the Redis server's
// clock against every algorithm at once (each on its own key): it parks
// until a window boundary, sends L requests just before it and L just after
// it (boundary-burst: at -W/10 and +W/10, 1 ms apart at most, times
// Config.Pace), telling obs about the plan and every decision, then
// measures memory and removes its keys. The Results hold one boundary-burst row per algorithm (clock
// "redis"), like `ratelab run --clock redis --scenarios boundary-burst`.
// A cancelled ctx stops it; the Results then hold what was measured.
func Run(ctx context.Context, rd *server.Redis, cfg Config, obs Observer, log *measure.DecisionLog) (*measure.Results, error) {
	cfg = cfg.WithDefaults()
	s := harness.NewSession(rd, cfg.RunID, 0)
	prefix := s.Prefix
	res := &measure.Results{
		Header: s.Header("demo", measure.Repro{Limits: []limit.Limit{cfg.Limit}}),
		Config: measure.RunConfig{
			Algorithms: cfg.Algorithms, Scenarios: []string{Scenario},
			Limit: cfg.Limit.Count, WindowMS: cfg.Limit.Window.Milliseconds(),
			Clock: string(harness.RedisClock), Prefix: prefix,
		},
		Results: []measure.Row{},
	}
	defer s.RemoveKeysOrSay(ctx, cfg.Progress)
	guard := func() error { return nil }
	err := func() error {
		if err := s.Start(ctx); err != nil { // clean skips the live demo
			return fmt.Errorf("register the demo: %w", err)
		}
		ctx, done, err := s.Guard(ctx, demoEstimate(cfg), nil)
		if err != nil {
			return err
		}
		guard = done
		sc, err := scenarios.Get(Scenario)
		if err != nil {
			return err
		}
		sched := sc.Build(scenarios.Params{Limit: cfg.Limit.Count, Window: cfg.Limit.Window})
		sched.Arrivals = Paced(sched.Arrivals, cfg.Pace)
		lim := cfg.Limit
		plan := measure.DemoPlan{Algorithms: cfg.Algorithms, Limit: lim.Count, Window: lim.Window,
			Arrivals: make([]measure.Event, len(sched.Arrivals))}
		for i, a := range sched.Arrivals {
			plan.Arrivals[i] = measure.Event{At: a.At, Cost: a.Cost}
		}
		jobs := make([]harness.Job, len(cfg.Algorithms))
		for i, name := range cfg.Algorithms {
			l, err := targets.NewAlgorithm(name, rd.Client, lim)
			if err != nil {
				return err
			}
			jobs[i] = harness.Job{Limiter: l, Limit: lim, Prefix: prefix + name + ":" + Scenario + ":"}.WithSchedule(sched)
			if obs != nil {
				jobs[i].Sink = harness.SinkFunc(func(o harness.Outcome) error {
					obs.Decided(i, o.Record(l.Name(), sched.Scenario))
					return nil
				})
			}
			plan.Describe = append(plan.Describe, l.Describe())
		}
		// scripts cached before the clock starts: no first-call EVAL in the burst
		if err := algorithms.LoadScripts(ctx, rd.Client); err != nil {
			return err
		}
		r := &harness.Runner{Redis: rd.Client, Clock: harness.RedisClock, Log: log, Lead: cfg.Lead,
			Anchored: func(boundary time.Time, offset time.Duration) {
				plan.Boundary, plan.Offset = boundary, offset
				plan.FirstLocal = boundary.Add(sched.Arrivals[0].At).Add(-offset)
				if obs != nil {
					obs.Planned(plan)
				}
			}}
		if cfg.Pace > 1 {
			res.Notes = append(res.Notes, fmt.Sprintf("paced %gx: each burst's requests %gx further apart than live (the bursts' times and the window unchanged)", cfg.Pace, cfg.Pace))
		}
		rows, err := r.Run(ctx, jobs)
		res.Results = append(res.Results, rows...)
		if err != nil {
			return err
		}
		return ctx.Err()
	}()
	err = harness.GuardErr(guard, err)
	res.DurationMS, res.Complete, res.Error = s.End(err)
	return res, err
}

// demoEstimate is the upper bound of bytes a demo writes: boundary-burst's
// 2 x Limit decisions per algorithm, doubled for its spare requests.
func demoEstimate(cfg Config) int64 {
	return 4 * cfg.Limit.Count * harness.BytesPerUnit * int64(len(cfg.Algorithms))
}
