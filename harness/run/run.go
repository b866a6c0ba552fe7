// Package run is the study behind `ratelab run` without --traffic: it
// compares algorithms and the user's targets on named scenarios and
// scenario files (Config, Validate, Run), each schedule built once and run
// on the engine (harness.Runner) against every limiter on its own keys.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/targets"
)

// Config is what `ratelab run` compares.
type Config struct {
	// Algorithms and Scenarios are registry names; empty means all
	// (Scenarios: all built-ins unless ScenarioFiles are given).
	Algorithms []string
	Scenarios  []string
	// ScenarioFiles are paths of YAML scenario files
	// (scenarios.LoadScenarioFile), run after Scenarios like built-ins.
	ScenarioFiles []string
	// Targets are limiters of the user's (scripts), compared after
	// Algorithms, each named by its Name in every row and plot.
	Targets []targets.Target
	// Limit overrides every scenario's own limit field by field: a Count
	// (1..MaxLimit) replaces the scenario's count, a Window
	// (1ms..MaxRunWindow) its window; a zero field keeps the scenario's
	// own. Precision, when set, reaches bucketed-hash (0: Window/10).
	// Config.LimitFor applies it.
	Limit limit.Limit
	// Cost replaces every arrival's cost when non-zero.
	Cost int64
	// Set says which of Limit.Count, Limit.Window, Cost and Timeout the
	// caller gave (a command line's flags): one set must be >= 1 (a window
	// or timeout > 0), since its zero would mean the scenario's own (no
	// bound).
	Set   Given
	Clock harness.ClockMode
	Seed  int64
	// Timeout bounds each decision call; OnError says what a failed call
	// counts as; MaxOutage stops the run when calls keep failing that long
	// (see harness.Runner).
	Timeout   time.Duration
	OnError   harness.ErrorPolicy
	MaxOutage time.Duration
	// AdaptTimeout, in virtual time, makes Timeout the floor of a bound
	// that grows with the round trips seen (harness.Runner.AdaptTimeout):
	// set it when the user did not choose the timeout.
	AdaptTimeout bool
	// RunID names the run's key prefix "ratelab:<RunID>:"; empty picks a fresh one.
	RunID string
	// Ended, when set, is called after each scenario that ran in full, with
	// the results so far (their rows of that scenario final, those of the
	// next ones not there yet): plots.Early draws its plots while the
	// next one runs. It must not keep res past the call.
	Ended func(res *measure.Results, scenario string)
}

// Given names fields of a Config (Config.Set) whose zero is not the
// default: Count is Limit.Count, Window Limit.Window, Cost Cost, Timeout
// Timeout (zero: no bound).
type Given struct{ Count, Window, Cost, Timeout bool }

// ErrKeysVanished is returned when a run's keys were removed while it ran
// (its registration marker vanished: someone ran FLUSHDB, ratelab clean, or
// the server lost its data): its figures cannot be trusted.
var ErrKeysVanished = errors.New("the run's keys were removed while it ran (FLUSH, `ratelab clean` or a restart): its figures are not to be trusted")

// MaxLimit is the largest limit a run takes: the schedules are built whole
// (overload holds 15 arrivals per unit of limit, 1.5 million per algorithm
// at this limit) and every outcome is kept for the metrics.
const MaxLimit = 100_000

// Validate checks cfg and returns an error naming the field: algorithms and
// scenarios must be registered names; scenario files ("scenario-file")
// must load, build with the run's limit and window, and not repeat a
// scenario's name; targets as targets.Check says; Limit.Count in
// 0..MaxLimit (0: each scenario's own); Limit.Window 0 (each
// scenario's own) or in 1ms..MaxRunWindow; Limit.Precision as
// limit.Limit.Validate says for every scenario's window;
// Cost 0 (each arrival's own) or in 1..the limit of every scenario run;
// Clock one of harness.ClockModes ("" means virtual), and one every target
// runs on (checkClocks, an error naming "clock"); OnError fail-closed or
// fail-open ("" means fail-closed); Timeout and MaxOutage >= 0. The
// fields of Set are checked first.
func (cfg Config) Validate() error {
	switch {
	case cfg.Set.Count && cfg.Limit.Count < 1:
		return field.Errorf("limit", "must be >= 1, got %d", cfg.Limit.Count)
	case cfg.Set.Window && cfg.Limit.Window <= 0:
		return field.Errorf("window", "must be > 0, got %s", cfg.Limit.Window)
	case cfg.Set.Cost && cfg.Cost < 1:
		return field.Errorf("cost", "must be >= 1, got %d", cfg.Cost)
	case cfg.Set.Timeout && cfg.Timeout <= 0:
		return field.Errorf("timeout", "must be > 0, got %s", cfg.Timeout)
	}
	if err := targets.CheckAlgorithms(cfg.Algorithms); err != nil {
		return &field.Error{Name: "algorithms", Err: err}
	}
	if err := targets.Check(cfg.Targets); err != nil {
		return err
	}
	if err := cfg.checkClocks(); err != nil {
		return err
	}
	for i, s := range cfg.Scenarios {
		if _, err := scenarios.Get(s); err != nil {
			return &field.Error{Name: "scenarios", Err: err}
		}
		if slices.Contains(cfg.Scenarios[:i], s) {
			return field.Errorf("scenarios", "%s given twice (it would run twice, on the same keys)", s)
		}
	}
	files, err := cfg.loadFiles()
	if err != nil {
		return err
	}
	switch {
	case cfg.Timeout < 0:
		return field.Errorf("timeout", "must be > 0, got %s", cfg.Timeout)
	case cfg.MaxOutage < 0:
		return field.Errorf("max-outage", "must be >= 0, got %s", cfg.MaxOutage)
	case cfg.OnError != "" && cfg.OnError != harness.FailClosed && cfg.OnError != harness.FailOpen:
		return field.Errorf("on-error", "unknown policy %q (want fail-closed or fail-open)", cfg.OnError)
	case cfg.Clock != "" && !slices.Contains(harness.ClockModes, cfg.Clock):
		return field.Errorf("clock", "unknown clock %q (want virtual, redis or client)", cfg.Clock)
	case cfg.Limit.Count > MaxLimit:
		return field.Errorf("limit", "at most %d in a run (overload alone would send %d requests per algorithm, all held in memory), got %d",
			MaxLimit, 15*MaxLimit, cfg.Limit.Count)
	case cfg.Limit.Window > harness.MaxRunWindow:
		return field.Errorf("window", "at most %s (ten years), got %s", limit.FormatWindow(harness.MaxRunWindow), limit.FormatWindow(cfg.Limit.Window))
	case cfg.Cost < 0:
		return field.Errorf("cost", "must be >= 1, got %d", cfg.Cost)
	}
	if o := cfg.Limit; o.Count < 0 || o.Window < 0 {
		// a negative field overrides nothing: said in limit's one wording
		if o.Count >= 0 {
			o.Count = 1
		}
		if o.Window >= 0 {
			o.Window = harness.MaxRunWindow
		}
		if err := o.Validate(); err != nil {
			return err
		}
	}
	list, _ := cfg.scenarioList(files)
	seen := map[string]bool{}
	for _, sc := range list {
		if seen[sc.Name] { // a file's scenario named as another's (--scenarios has no repeats)
			return field.Errorf("scenario-file", "scenario %s would run twice (on the same keys); set another name: in the file", sc.Name)
		}
		seen[sc.Name] = true
		l, _ := cfg.LimitFor(sc)
		if err := l.Validate(); err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		if cfg.Cost > l.Count {
			return field.Errorf("cost", "%d exceeds the limit %d of scenario %s; a request can never cost more than the limit (raise the limit)", cfg.Cost, l.Count, sc.Name)
		}
	}
	for _, sc := range files {
		if sc.Check == nil {
			continue
		}
		_, p := cfg.LimitFor(sc)
		if err := sc.Check(p); err != nil {
			return field.Errorf("scenario-file", "scenario %s: %w", sc.Name, err)
		}
	}
	return nil
}

// LimitFor is the limit scenario sc runs at — its own, with the non-zero
// fields of cfg.Limit over it — and the scenario's parameters with that
// limit and cfg.Seed: the one place the override is applied, so the
// schedule (and its anchor), the limiter and the rows read the same window.
func (cfg Config) LimitFor(sc scenarios.Scenario) (limit.Limit, scenarios.Params) {
	p := sc.Defaults
	p.Seed = cfg.Seed
	if cfg.Limit.Count > 0 {
		p.Limit = cfg.Limit.Count
	}
	if cfg.Limit.Window > 0 {
		p.Window = cfg.Limit.Window
	}
	return limit.Limit{Count: p.Limit, Window: p.Window, Precision: cfg.Limit.Precision}, p
}

// loadFiles loads cfg.ScenarioFiles; errors are named "scenario-file".
func (cfg Config) loadFiles() ([]scenarios.Scenario, error) {
	var out []scenarios.Scenario
	for _, path := range cfg.ScenarioFiles {
		sc, err := scenarios.LoadScenarioFile(path)
		if err != nil {
			return nil, &field.Error{Name: "scenario-file", Err: err}
		}
		out = append(out, sc)
	}
	return out, nil
}

// scenarioList is what a run runs, in order: the named built-ins, then the
// files' scenarios; all built-ins when neither is given.
func (cfg Config) scenarioList(files []scenarios.Scenario) ([]scenarios.Scenario, error) {
	names := cfg.Scenarios
	if len(names) == 0 && len(files) == 0 {
		names = scenarios.Names()
	}
	var out []scenarios.Scenario
	for _, n := range names {
		sc, err := scenarios.Get(n)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return append(out, files...), nil
}

// WithDefaults returns cfg with its zero fields set to their defaults: all
// algorithms, the virtual clock, OnError fail-closed. (Empty Scenarios
// stay empty: Run reads them as all built-ins unless ScenarioFiles are
// given.) Run calls it.
func (cfg Config) WithDefaults() Config {
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = algorithms.Names()
	}
	if cfg.Clock == "" {
		cfg.Clock = harness.VirtualClock
	}
	if cfg.OnError == "" {
		cfg.OnError = harness.FailClosed
	}
	return cfg
}

// Run compares cfg.Algorithms and cfg.Targets on cfg.Scenarios against rd, streaming every
// decision to log, and returns the results. Every scenario's schedule is built
// once and run against each algorithm (on its own keys). The run's keys are
// removed at the end, also when ctx is cancelled. On error the returned
// Results hold what was measured, with Complete false and Error set; a
// scenario file that does not load returns nil Results (Validate says so
// first).
func Run(ctx context.Context, rd *server.Redis, cfg Config, log *measure.DecisionLog, progress io.Writer) (res *measure.Results, err error) {
	cfg = cfg.WithDefaults()
	files, err := cfg.loadFiles()
	if err != nil {
		return nil, err
	}
	list, err := cfg.scenarioList(files)
	if err != nil {
		return nil, err
	}
	cfg.Scenarios = nil
	for _, sc := range list {
		cfg.Scenarios = append(cfg.Scenarios, sc.Name)
	}
	s := harness.NewSession(rd, cfg.RunID, cfg.Timeout)
	prefix := s.Prefix
	names := append(slices.Clone(cfg.Algorithms), targets.Names(cfg.Targets)...)
	var limits []limit.Limit // each scenario's own unless overridden
	if cfg.Limit != (limit.Limit{}) {
		limits = []limit.Limit{cfg.Limit}
	}
	res = &measure.Results{
		Header: s.Header("run", measure.Repro{Seed: cfg.Seed, Limits: limits, TargetSHA256: targets.Digests(cfg.Targets)}),
		Config: measure.RunConfig{
			Algorithms: names, Scenarios: cfg.Scenarios,
			Limit: cfg.Limit.Count, WindowMS: cfg.Limit.Window.Milliseconds(),
			Clock: string(cfg.Clock), Seed: cfg.Seed, Prefix: prefix,
		},
		Results: []measure.Row{},
	}
	defer s.RemoveKeysOrSay(ctx, progress) // nothing left behind, even after Ctrl-C
	res.Config.TimeoutMS = cfg.Timeout.Milliseconds()
	res.Config.OnError = string(cfg.OnError)
	virtual := cfg.Clock == harness.VirtualClock
	newRunner := func() *harness.Runner {
		r := &harness.Runner{Redis: rd.Client, Clock: cfg.Clock, Log: log, Progress: progress,
			Timeout: cfg.Timeout, AdaptTimeout: cfg.AdaptTimeout, OnError: cfg.OnError, MaxOutage: cfg.MaxOutage}
		if virtual {
			r.Pipeline, r.Parallel = Pipeline, Parallel
		}
		return r
	}
	// a user's script meets virtual time as in verify: its key TTLs on
	// the virtual clock, which is all the clock a script that reads none has
	runner, scripts := newRunner(), newRunner()
	scripts.Expiry = virtual
	if virtual {
		res.Notes = append(res.Notes, LatencyNote)
	}
	told := map[string]bool{} // targets whose clock a note explains
	guard := func() error { return nil }
	err = func() error {
		if err := s.Start(ctx); err != nil { // clean skips the live run
			return fmt.Errorf("register the run: %w", err)
		}
		ctx, done, err := s.Guard(ctx, cfg.estimateBytes(list, len(names)), progress)
		if err != nil {
			return err
		}
		guard = done
		if err := cfg.probe(ctx, rd, list, prefix); err != nil {
			return err
		}
		for _, sc := range list {
			sname := sc.Name
			lim, p := cfg.LimitFor(sc)
			sched, err := sc.Make(p)
			if err != nil {
				return err
			}
			if cfg.Cost > 0 {
				for i := range sched.Arrivals {
					sched.Arrivals[i].Cost = cfg.Cost
				}
			}
			var jobs, scriptJobs []harness.Job
			var built []algorithms.Limiter
			closeBuilt := func() {
				for _, l := range built {
					closeLimiter(l)
				}
			}
			for _, aname := range names {
				l, err := targets.NewLimiter(aname, cfg.Targets, rd.Client, lim)
				if err != nil {
					closeBuilt()
					return fmt.Errorf("%s: %w", aname, err)
				}
				built = append(built, l)
				if err := clockRefusal(l, cfg.Clock); err != nil { // Validate refused it first
					closeBuilt()
					return err
				}
				j := harness.Job{Limiter: l, Limit: lim, Prefix: prefix + aname + ":" + sname + ":"}.WithSchedule(sched)
				if !virtual || !slices.Contains(targets.Names(cfg.Targets), aname) || !onKeys(l) {
					jobs = append(jobs, j)
					continue
				}
				scriptJobs = append(scriptJobs, j)
				if !l.Capabilities().InjectsTime && !told[aname] {
					told[aname] = true
					note := fmt.Sprintf("%s reads no clock: it ran in virtual time, its keys' TTLs on the virtual clock (as verify runs it)", aname)
					res.Notes = append(res.Notes, note)
					harness.Say(progress, "%s\n", note)
				}
			}
			if progress != nil {
				fmt.Fprintf(progress, "%s: %d arrivals, limit %s, %d algorithms, %s clock\n",
					sname, len(sched.Arrivals), lim, len(jobs)+len(scriptJobs), cfg.Clock)
			}
			rows, err := runner.Run(ctx, jobs)
			if err == nil && len(scriptJobs) > 0 {
				var more []measure.Row
				more, err = scripts.Run(ctx, scriptJobs)
				if err == nil {
					err = withoutCompanions(ctx, rd, scriptJobs, more)
				}
				rows, jobs = append(rows, more...), append(jobs, scriptJobs...)
			}
			if err == nil && virtual {
				err = sampleLatency(ctx, runner, jobs, sched, prefix+"~latency:", rows)
			}
			closeBuilt()
			res.Results = append(res.Results, rows...)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", sname, err)
			}
			if cfg.Ended != nil {
				cfg.Ended(res, sname)
			}
		}
		return nil
	}()
	err = harness.GuardErr(guard, err)
	if note := MemoryNote(res.Results); note != "" {
		res.Notes = append(res.Notes, note)
	}
	if s.Vanished() {
		// the figures after that point are not the limiter's: say so, loudly
		note := ErrKeysVanished.Error()
		res.Notes = append(res.Notes, note)
		if progress != nil {
			fmt.Fprintln(progress, "ratelab: warning:", note)
		}
	}
	defer func() {
		// after the run's own time: a pending SCRIPT KILL is waited for
		// (the user's Redis must not be left BUSY), then named as the cause
		if kerr := errors.Join(runner.Settle(), scripts.Settle()); kerr != nil {
			if err == nil {
				err = kerr
			} else {
				err = fmt.Errorf("%w: %w", kerr, err)
			}
			res.Complete, res.Error = false, err.Error()
		}
	}()
	err = s.Explain(ctx, err)
	res.DurationMS, res.Complete, res.Error = s.End(err)
	return res, err
}

// clockRefusal says why l cannot run on clock, or nil: on the virtual
// clock, a limiter that reads its own clock and is no script on Redis
// (whose key TTLs would bring it the virtual time); on Redis TIME, one
// whose key is built from the clock. The error names "clock".
func clockRefusal(l algorithms.Limiter, clock harness.ClockMode) error {
	if clock == "" || clock == harness.VirtualClock {
		if !l.Capabilities().InjectsTime && !onKeys(l) {
			// replayed at full speed, its own clock would see no time pass
			return field.Errorf("clock", "%s decides on its own clock, which virtual time cannot reach: pass the time in a template ({now_ms}), or run on the redis clock", l.Name())
		}
		return nil
	}
	if ck, ok := l.(interface{ ClockKeys() []string }); ok && clock == harness.RedisClock && len(ck.ClockKeys()) > 0 {
		return field.Errorf("clock", "%s: its key %q is built from the clock, which needs an injected one (virtual or client)", l.Name(), ck.ClockKeys()[0])
	}
	return nil
}

// onKeys reports whether l is a script on Redis (server- or client-side)
// whose state is its keys: on the virtual clock, time reaches it through
// its keys' TTLs (harness.Runner.Expiry) when it reads no clock.
func onKeys(l algorithms.Limiter) bool {
	_, scripted := l.(algorithms.Scripted)
	_, clientSide := l.(custom.Gated)
	return (scripted || clientSide) && l.Capabilities().UsesKeys
}

// probe makes one decision of each target, at the first scenario's
// limit, on a key of its own under prefix, and returns the error of a
// call that failed for what the script was not given (its Explain: a
// *field.Error wrapping a *custom.InputsError), so that the run stops
// before any scenario and says what the script needs; any other failure
// is left to the scenarios, which count it.
func (cfg Config) probe(ctx context.Context, rd *server.Redis, list []scenarios.Scenario, prefix string) error {
	if len(list) == 0 {
		return nil
	}
	lim, _ := cfg.LimitFor(list[0])
	at := algorithms.At(harness.VirtualEpoch)
	switch cfg.Clock {
	case harness.RedisClock:
		at = algorithms.RedisTime()
	case harness.ClientClock:
		at = algorithms.At(time.Now())
	}
	for _, t := range cfg.Targets {
		l, err := t.New(rd.Client, lim)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		ex, ok := l.(interface{ Explain(error) error })
		if !ok {
			closeLimiter(l)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, max(cfg.Timeout, time.Second))
		_, err = l.Allow(pctx, prefix+"~probe:"+t.Name+":{probe}", 1, at)
		cancel()
		closeLimiter(l)
		if err = ex.Explain(err); errors.As(err, new(*custom.InputsError)) {
			return err
		}
	}
	return nil
}

// checkClocks refuses a target that cannot run on cfg.Clock
// (clockRefusal), built for 1 per 1s without Redis as targets.Load does;
// one that does not build is left to Run, which says why.
func (cfg Config) checkClocks() error {
	for _, t := range cfg.Targets {
		l, err := t.New(nil, limit.Limit{Count: 1, Window: time.Second})
		if err != nil {
			continue
		}
		if err := clockRefusal(l, cfg.Clock); err != nil {
			return err
		}
	}
	return nil
}

// withoutCompanions sets the memory of rows (one per job, in order) to
// that of their keys without the companion hashes the virtual clock's key
// TTLs live in (vclock.CompanionKey): the limiter's own keys, as a row of
// a built-in counts them.
func withoutCompanions(ctx context.Context, rd *server.Redis, jobs []harness.Job, rows []measure.Row) error {
	for i, j := range jobs {
		mctx, cancel := server.CleanupContext(ctx, 30*time.Second)
		keys, err := server.ScanKeys(mctx, rd.Client, j.Prefix)
		if err == nil {
			keys = slices.DeleteFunc(keys, func(k string) bool { return strings.HasPrefix(k, j.Prefix+"~vt{") })
			rows[i].Keys, rows[i].KeyNameBytes = int64(len(keys)), harness.LongestName(keys)
			rows[i].MemoryBytes, err = server.MemoryUsage(mctx, rd.Client, keys)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("memory of %s: %w", j.Limiter.Name(), err)
		}
	}
	return nil
}

// estimateBytes is the upper bound of bytes a scenario run writes: every
// scenario's schedule (built as Run builds it) for each of n algorithms and
// targets; -1 (unknown) when a schedule cannot be built.
func (cfg Config) estimateBytes(list []scenarios.Scenario, n int) int64 {
	var total int64
	for _, sc := range list {
		_, p := cfg.LimitFor(sc)
		sched, err := sc.Make(p)
		if err != nil {
			return -1
		}
		b := harness.ScheduleBytes(sched.Arrivals)
		if cfg.Cost > 0 {
			b = int64(len(sched.Arrivals)) * cfg.Cost * harness.BytesPerUnit
		}
		total += b * int64(n)
	}
	return total
}

// closeLimiter closes l when it holds what must go with it (an exec
// target's processes and endpoint: io.Closer); its error changes no row.
func closeLimiter(l algorithms.Limiter) {
	if c, ok := l.(io.Closer); ok {
		_ = c.Close()
	}
}
