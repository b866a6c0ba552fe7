package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/scenarios"
)

type runFlags struct {
	redis      redisFlags
	target     targetFlags
	algorithms []string
	scenarios  []string
	limit      int64
	window     time.Duration
	cost       int64
	clock      string
	out        string
	format     formatFlag
	seed       int64
	timeout    time.Duration
	onError    string
	maxOutage  time.Duration
	force      bool

	scenarioFiles []string
	traffic       trafficFlags
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:     "run",
		Short:   "Compare the algorithms on every scenario against a real Redis",
		Long:    helpText("run", "long", strings.Join(scenarios.Names(), ", ")),
		Example: helpText("run", "example"),
		Args:    cobra.NoArgs,
		RunE:    func(c *cobra.Command, _ []string) error { return runRun(c, f, stdout, stderr) },
	}
	f.bind(c)
	return c
}

// bind declares run's flags on c, stored in f.
func (f *runFlags) bind(c *cobra.Command) {
	fl := c.Flags()
	f.redis.add(c)
	f.redis.addEviction(c)
	f.target.addMany(c)
	fl.StringSliceVar(&f.algorithms, "algorithms", nil, "algorithms to compare, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.StringSliceVar(&f.scenarios, "scenarios", nil, "scenarios to run, comma-separated (default all: "+strings.Join(scenarios.Names(), ",")+", unless --scenario-file is given)")
	fl.StringArrayVar(&f.scenarioFiles, "scenario-file", nil, "run the scenario of this YAML file (repeatable; see scenarios/builtin/*.yaml)")
	f.traffic.add(c)
	fl.Int64Var(&f.limit, "limit", 0, "cost units per window, for every scenario (default: each scenario's own)")
	windowVar(fl, &f.window, "window", 0, "window length, for every scenario, e.g. 10s, 1m, 1d (default: each scenario's own)")
	fl.Int64Var(&f.cost, "cost", 0, "cost of every request (default: each scenario's own)")
	fl.StringVar(&f.clock, "clock", string(harness.VirtualClock), "virtual, redis or client")
	fl.StringVar(&f.out, "out", "", "directory for results.json, decisions.jsonl, report.md and plots (default results/<run id>); it must be new or empty")
	fl.BoolVar(&f.force, "force", false, "replace the results of an earlier run in --out")
	f.format.add(c)
	fl.Int64Var(&f.seed, "seed", 1, "seed of the scenarios' random choices")
	fl.DurationVar(&f.timeout, "timeout", 500*time.Millisecond, "bound on each decision call; a call past it counts as failed")
	fl.StringVar(&f.onError, "on-error", string(harness.FailClosed), "what a failed call counts as: fail-closed (denied) or fail-open (allowed, unmetered)")
	fl.DurationVar(&f.maxOutage, "max-outage", 2*time.Second, "stop the run (results marked incomplete, exit 2) when calls keep failing this long; 0 never stops")
}

// config turns the flags into a run.Config and checks it. A limit,
// window or cost given as 0 is refused (0 in the Config means "each
// scenario's own").
func (f *runFlags) config(c *cobra.Command) (run.Config, error) {
	cfg := run.Config{Algorithms: f.algorithms, Scenarios: f.scenarios, ScenarioFiles: f.scenarioFiles, Limit: limit.Limit{Count: f.limit, Window: f.window},
		Cost: f.cost, Seed: f.seed, Clock: harness.ClockMode(f.clock),
		Timeout: f.timeout, OnError: harness.ErrorPolicy(f.onError), MaxOutage: f.maxOutage}
	if err := f.target.check(c); err != nil {
		return cfg, err
	}
	if err := f.target.load(); err != nil {
		return cfg, err
	}
	cfg.Targets = f.target.targets()
	if f.timeout <= 0 {
		return cfg, usagef("--timeout: must be > 0, got %s", f.timeout)
	}
	changed := c.Flags().Changed
	for _, n := range trafficOnly {
		if changed(n) {
			return cfg, usagef("--%s: only with --traffic", n)
		}
	}
	switch {
	case changed("limit") && f.limit < 1:
		return cfg, usagef("--limit: must be >= 1, got %d", f.limit)
	case changed("window") && f.window <= 0:
		return cfg, usagef("--window: must be > 0, got %s", f.window)
	case changed("cost") && f.cost < 1:
		return cfg, usagef("--cost: must be >= 1, got %d", f.cost)
	}
	if _, err := f.format.get(); err != nil {
		return cfg, err
	}
	return cfg, flagError(cfg.Validate(), targetFlagOf)
}

func runRun(c *cobra.Command, f *runFlags, stdout, stderr io.Writer) error {
	if f.traffic.path != "" {
		return runTraffic(c, f, stdout, stderr)
	}
	cfg, err := f.config(c)
	if err != nil {
		return err
	}
	cfg.RunID = server.NewRunID()
	rd, out, err := openOut(c, &f.redis, f.out, cfg.RunID, f.force, stderr)
	if err != nil {
		return err
	}
	defer closeRedis(rd, stderr)
	rd, unguard, err := f.target.guard(c.Context(), rd, cfg.RunID, true, stderr)
	if err != nil {
		return err
	}
	defer unguard()
	df, err := os.Create(filepath.Join(out, "decisions.jsonl"))
	if err != nil {
		return usagef("--out: %w", err)
	}
	log := measure.NewDecisionLog(df)
	res, runErr := run.Run(c.Context(), rd, cfg, log, stderr)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	return publish(stdout, stderr, "run", out, res.DurationMS, runErr,
		func(dir string) error { return reports.WriteDir(dir, res) },
		f.format.render(res))
}
