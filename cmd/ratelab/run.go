package main

import (
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/replay"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish"
	"github.com/ratelab/ratelab/reports/plots"
	"github.com/ratelab/ratelab/scenarios"
)

// runFlags are run's flags: most go straight into the run.Config (and
// with --traffic into a replay.Config).
type runFlags struct {
	commonFlags
	target  targetFlags
	cfg     run.Config
	traffic trafficFlags
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &runFlags{}
	c := command("run", "Compare the algorithms on every scenario against a real Redis",
		func(c *cobra.Command) error { return runRun(c, f, stdout, stderr) }, strings.Join(scenarios.Names(), ", "))
	f.bind(c)
	return c
}

// bind declares run's flags on c, stored in f.
func (f *runFlags) bind(c *cobra.Command) {
	fl, cfg := c.Flags(), &f.cfg
	f.addCommon(c, "directory for results.json, report.md and plots (default results/<run id>); it must be new or empty", "run")
	f.out.addDecisions(c)
	f.target.addMany(c)
	f.target.addManyFunction(c)
	f.target.addExec(c)
	fl.StringSliceVar(&cfg.Algorithms, "algorithms", nil, "algorithms to compare, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.StringSliceVar(&cfg.Scenarios, "scenarios", nil, "scenarios to run, comma-separated (default all: "+strings.Join(scenarios.Names(), ",")+", unless --scenario-file is given)")
	fl.StringArrayVar(&cfg.ScenarioFiles, "scenario-file", nil, "run the scenario of this YAML file (repeatable; see scenarios/builtin/*.yaml)")
	f.traffic.add(c)
	countVar(fl, &cfg.Limit.Count, "limit", 0, "cost units per window, for every scenario (default: each scenario's own)")
	windowVar(fl, &cfg.Limit.Window, "window", 0, "window length, for every scenario, e.g. 10s, 1m, 1d (default: each scenario's own)")
	fl.Int64Var(&cfg.Cost, "cost", 0, "cost of every request (default: each scenario's own)")
	fl.StringVar((*string)(&cfg.Clock), "clock", string(harness.VirtualClock), "virtual, redis or client")
	fl.Int64Var(&cfg.Seed, "seed", 1, "seed of the scenarios' random choices")
	fl.DurationVar(&cfg.Timeout, "timeout", 500*time.Millisecond, "bound on each decision call; a call past it counts as failed")
	fl.StringVar((*string)(&cfg.OnError), "on-error", string(harness.FailClosed), "what a failed call counts as: fail-closed (denied) or fail-open (allowed, unmetered)")
	fl.DurationVar(&cfg.MaxOutage, "max-outage", 2*time.Second, "stop the run (results marked incomplete, exit 2) when calls keep failing this long; 0 never stops")
}

// config turns the flags into a run.Config and checks it (a limit, window
// or cost given as 0, and a --timeout of 0, are refused: run.Config.Set).
func (f *runFlags) config(c *cobra.Command) (run.Config, error) {
	cfg := f.cfg
	if err := f.target.load(c, nil); err != nil {
		return cfg, err
	}
	cfg.Targets = f.target.targets()
	changed := c.Flags().Changed
	for _, n := range trafficOnly {
		if changed(n) {
			return cfg, usagef("--%s: only with --traffic", n)
		}
	}
	cfg.Set = run.Given{Count: changed("limit"), Window: changed("window"), Cost: changed("cost"), Timeout: true} // a --timeout of 0 is a mistake
	cfg.AdaptTimeout = !changed("timeout")                                                                        // virtual time: a slow machine is waited for
	return cfg, flagError(c.Flags(), cfg.Validate())
}

func runRun(c *cobra.Command, f *runFlags, stdout, stderr io.Writer) error {
	if f.traffic.path != "" {
		return runTraffic(c, f, stdout, stderr)
	}
	cfg, err := f.config(c)
	if err != nil {
		return err
	}
	early := plots.NewEarly() // each scenario's plots drawn while the next one runs
	cfg.RunID, cfg.Ended = server.NewRunID(), early.Scenario
	l, err := f.start(c, &f.target, cfg.RunID, true, stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	var res *measure.Results
	runErr := f.out.logDecisions(func(log *measure.DecisionLog) (err error) {
		res, err = run.Run(c.Context(), l.Redis, cfg, log, stderr)
		return err
	})
	if res == nil { // decisions.jsonl could not be created, or the run stopped before any result
		return runErr
	}
	if te := teachError(c, runErr); te != nil { // a script's first call failed: nothing was run
		l.Undo()
		return te
	}
	return publish.Publish(c.Context(), stdout, stderr, "run", l.Dir, early.Of(res), res.DurationMS, runErr, f.format.Renderer(res))
}

// trafficFlags are run's flags for replaying a traffic file.
type trafficFlags struct {
	path     string
	opts     scenarios.TrafficOptions
	pipeline int
}

func (t *trafficFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&t.path, "traffic", "", "replay this traffic file (CSV, JSON Lines or nginx/Apache access log, plain or .gz) instead of the scenarios; needs --limit and --window (per key)")
	fl.StringVar((*string)(&t.opts.Format), "traffic-format", "auto", "format of --traffic: auto, csv, jsonl or access-log")
	fl.StringVar(&t.opts.KeyField, "key-field", "", "column or field holding the client key (default key; access logs: remote_addr, or remote_user, uri, path, http_user_agent, extra1, ...)")
	fl.StringVar(&t.opts.TimeField, "time-field", "", "column or field holding the time (default timestamp; access logs: time_local)")
	fl.StringVar(&t.opts.CostField, "cost-field", "", "column or field holding the cost (default cost when present, else 1; access logs: body_bytes_sent)")
	fl.StringVar((*string)(&t.opts.TimeUnit), "time-unit", "auto", "how --time-field is written: auto, rfc3339, s, ms, us or ns")
	fl.BoolVar(&t.opts.Strict, "strict", false, "stop at the first malformed line of --traffic (default: count it, show the first few, go on)")
	fl.IntVar(&t.pipeline, "pipeline", replay.DefaultPipeline, "decisions per round trip when replaying --traffic")
}

// trafficOnly are the flags that mean something only with --traffic.
var trafficOnly = []string{"traffic-format", "key-field", "time-field", "cost-field", "time-unit", "strict", "pipeline"}

// runTraffic is `run --traffic`: open the file, replay it, publish.
func runTraffic(c *cobra.Command, f *runFlags, stdout, stderr io.Writer) error {
	// a replay runs the built-ins: a target given beside it would be
	// dropped without a word
	for _, n := range []string{"script", "config", "key", "arg", "allowed", "allowed-when", "trust-script"} {
		if c.Flags().Changed(n) {
			return usagef("--%s: --traffic replays the built-in algorithms only (--algorithms); run your script's scenarios without --traffic", n)
		}
	}
	f.cfg.AdaptTimeout = !c.Flags().Changed("timeout") // virtual time: a slow machine is waited for
	cfg, file, err := f.cfg.OpenReplay(f.traffic.path, f.traffic.pipeline, f.traffic.opts)
	if err != nil {
		return flagError(c.Flags(), err)
	}
	defer func() { _ = file.Close() }() // read only: nothing to flush
	cfg.RunID = server.NewRunID()
	l, err := f.start(c, nil, cfg.RunID, false, stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	var res *measure.Results
	runErr := f.out.logDecisions(func(log *measure.DecisionLog) (err error) {
		res, err = replay.Run(c.Context(), l.Redis, file, cfg, log, stderr)
		return err
	})
	if res == nil { // nothing was replayed: leave no results behind
		l.Undo()
		return flagError(c.Flags(), runErr)
	}
	return publish.Publish(c.Context(), stdout, stderr, "run", l.Dir, res, res.DurationMS, runErr, f.format.Renderer(res))
}
