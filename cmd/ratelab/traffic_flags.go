package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/replay"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/scenarios"
)

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

// replayConfig turns run's flags into a replay.Config and checks it.
func (f *runFlags) replayConfig(c *cobra.Command) (replay.Config, error) {
	t, rc := f.traffic, f.cfg
	cfg := replay.Config{Algorithms: rc.Algorithms, Limit: rc.Limit, Cost: rc.Cost,
		Source: t.path, Name: "traffic", Pipeline: t.pipeline,
		Timeout: rc.Timeout, OnError: rc.OnError, MaxOutage: rc.MaxOutage, Traffic: t.opts}
	switch {
	case len(rc.Scenarios) > 0 || len(rc.ScenarioFiles) > 0:
		return cfg, usagef("--traffic: replays the file alone; leave out --scenarios and --scenario-file")
	case rc.Clock != harness.VirtualClock:
		return cfg, usagef("--clock: --traffic replays in virtual time only, got %s", rc.Clock)
	case t.pipeline < 1:
		return cfg, usagef("--pipeline: must be >= 1, got %d", t.pipeline)
	case rc.Limit.Count == 0: // run's default: each scenario's own, and a traffic file has none
		return cfg, usagef("--limit: required with traffic (cost units per window per key)")
	case rc.Limit.Window == 0:
		return cfg, usagef("--window: required with traffic")
	}
	return cfg, flagError(c.Flags(), cfg.Validate())
}

// runTraffic is `run --traffic`: open the file, replay it, publish.
func runTraffic(c *cobra.Command, f *runFlags, stdout, stderr io.Writer) error {
	cfg, err := f.replayConfig(c)
	if err != nil {
		return err
	}
	file, size, err := scenarios.OpenTraffic(f.traffic.path)
	if err != nil {
		return flagError(c.Flags(), err)
	}
	defer func() { _ = file.Close() }() // read only: nothing to flush
	cfg.Size = size
	cfg.RunID = server.NewRunID()
	rd, out, undo, err := openOut(c, &f.redis, f.out, cfg.RunID, stderr)
	if err != nil {
		return err
	}
	defer closeRedis(rd, stderr)
	var res *measure.Results
	runErr := logDecisions(out, func(log *measure.DecisionLog) (err error) {
		res, err = replay.Run(c.Context(), rd, file, cfg, log, stderr)
		return err
	})
	if res == nil { // nothing was replayed: leave no results behind
		undo()
		return flagError(c.Flags(), runErr)
	}
	return publish(stdout, stderr, "run", out, res.DurationMS, runErr,
		func(dir string) error { return reports.WriteDir(dir, res) },
		f.format.render(res))
}
