package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
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
	format     string
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
		Use:   "run",
		Short: "Compare the algorithms on every scenario against a real Redis",
		Long: `run builds each scenario's schedule, sends it to every algorithm (each on its
own keys), and prints one row per algorithm and scenario: what was offered and
accepted, the most accepted within any one window (max in W) and its ratio to
the limit (above 1: the limit was exceeded), what an exact sliding-window log
would accept (ideal) and accepted/ideal (fidelity), memory per key and latency.

Your own scripts stand beside the built-ins, named by their files: --script
(repeatable; all share --key, --arg, --allowed: see ratelab verify --help) or
--config FILE (repeatable; each file its own keys, args and predicate).

It writes results.json, decisions.jsonl (every decision, streamed), report.md
and plots (PNG and SVG) to --out. ratelab removes its keys at the end.

--scenario-file runs your own YAML scenario like a built-in (start from a copy
of scenarios/builtin/*.yaml). --traffic replays a recorded traffic file in
virtual time instead: one limit (--limit per --window) per client key, every
algorithm that takes virtual time, the table plus per-key figures (keys over
the limit, the worst key, units an exact sliding-window log would have
accepted but the algorithm refused, peak memory) and a trailing-window plot.
Malformed lines are counted and the first few shown with line numbers
(--strict stops at the first); an empty or unreadable file is exit 2.

Scenarios: ` + strings.Join(scenarios.Names(), ", ") + `.
Clocks: virtual (exact injected timestamps, no sleeping: 24 h in seconds),
redis (real time, scripts read Redis TIME, bursts aligned to the server's
clock), client (real time, the harness's own clock injected).`,
		Example: `  ratelab run
  ratelab run --algorithms fixed-window,sliding-log --scenarios boundary-burst
  ratelab run --clock redis --window 2s --limit 20 --scenarios boundary-burst
  ratelab run --script mine.lua --arg '{now_us}' --arg '{window_us}' --arg '{limit}' --arg '{request_id}'
  ratelab run --script a.lua --script b.lua --arg '{limit}' --allowed 'reply != nil' --clock client
  ratelab run --config mine.yaml --config theirs.yaml --scenarios boundary-burst
  ratelab run --format json > results.json
  ratelab run --redis redis://:secret@10.0.0.5:6379/2 --out /tmp/rl
  ratelab run --redis cluster --scenarios boundary-burst          # a throwaway 3-master Redis Cluster
  ratelab run --redis container --redis-image ratelab/redis:local # make redis-image builds it (no registry needed)
  ratelab run --redis redis+cluster://ratelab:secret@10.0.0.5:7000,10.0.0.6:7000
  ratelab run --redis rediss://redis.internal:6380 --redis-ca ca.pem
  ratelab run --scenario-file my-cron.yaml --algorithms fixed-window,sliding-log
  ratelab run --traffic access.log.gz --limit 100 --window 1m
  ratelab run --traffic requests.csv --key-field user_id --time-field ts --time-unit ms --limit 20 --window 10s
  ratelab run --traffic events.jsonl --key-field client.id --cost-field weight --limit 500 --window 1h --strict`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runRun(c, f, stdout, stderr) },
	}
	f.bind(c)
	return c
}

// bind declares run's flags on c, stored in f.
func (f *runFlags) bind(c *cobra.Command) {
	fl := c.Flags()
	f.redis.add(c)
	f.target.addMany(c)
	fl.StringSliceVar(&f.algorithms, "algorithms", nil, "algorithms to compare, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.StringSliceVar(&f.scenarios, "scenarios", nil, "scenarios to run, comma-separated (default all: "+strings.Join(scenarios.Names(), ",")+", unless --scenario-file is given)")
	fl.StringArrayVar(&f.scenarioFiles, "scenario-file", nil, "run the scenario of this YAML file (repeatable; see scenarios/builtin/*.yaml)")
	f.traffic.add(c)
	fl.Int64Var(&f.limit, "limit", 0, "cost units per window, for every scenario (default: each scenario's own)")
	fl.DurationVar(&f.window, "window", 0, "window length, for every scenario, e.g. 10s, 1m (default: each scenario's own)")
	fl.Int64Var(&f.cost, "cost", 0, "cost of every request (default: each scenario's own)")
	fl.StringVar(&f.clock, "clock", string(harness.VirtualClock), "virtual, redis or client")
	fl.StringVar(&f.out, "out", "", "directory for results.json, decisions.jsonl, report.md and plots (default results/<run id>); it must be new or empty")
	fl.BoolVar(&f.force, "force", false, "replace the results of an earlier run in --out")
	fl.StringVar(&f.format, "format", "table", "what to print on stdout: "+strings.Join(reports.Formats, ", "))
	fl.Int64Var(&f.seed, "seed", 1, "seed of the scenarios' random choices")
	fl.DurationVar(&f.timeout, "timeout", 500*time.Millisecond, "bound on each decision call; a call past it counts as failed")
	fl.StringVar(&f.onError, "on-error", string(harness.FailClosed), "what a failed call counts as: fail-closed (denied) or fail-open (allowed, unmetered)")
	fl.DurationVar(&f.maxOutage, "max-outage", 2*time.Second, "stop the run (results marked incomplete, exit 2) when calls keep failing this long; 0 never stops")
}

// config turns the flags into a harness.Config and checks it. A limit,
// window or cost given as 0 is refused (0 in the Config means "each
// scenario's own").
func (f *runFlags) config(c *cobra.Command) (harness.Config, error) {
	cfg := harness.Config{Algorithms: f.algorithms, Scenarios: f.scenarios, ScenarioFiles: f.scenarioFiles, Limit: f.limit, Window: f.window,
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
	if !slices.Contains(reports.Formats, f.format) {
		return cfg, usagef("--format: unknown format %q (want %s)", f.format, strings.Join(reports.Formats, ", "))
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
	cfg.RunID = engine.NewRunID()
	rd, out, err := openOut(c, &f.redis, f.out, cfg.RunID, f.force, stderr)
	if err != nil {
		return err
	}
	defer rd.Close()
	df, err := os.Create(filepath.Join(out, "decisions.jsonl"))
	if err != nil {
		return usagef("--out: %w", err)
	}
	log := measure.NewDecisionLog(df)
	res, runErr := harness.Run(c.Context(), rd, cfg, log, stderr)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	return publish(stdout, stderr, "run", out, res.DurationMS, runErr,
		func(dir string) error { return reports.WriteDir(dir, res) },
		func(w io.Writer) error { return reports.Write(w, f.format, res) })
}
