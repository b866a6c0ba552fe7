package main

import (
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/replay"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/scenarios"
)

// trafficFlags are run's flags for replaying a traffic file.
type trafficFlags struct {
	path      string
	format    string
	keyField  string
	timeField string
	costField string
	timeUnit  string
	strict    bool
	pipeline  int
}

func (t *trafficFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&t.path, "traffic", "", "replay this traffic file (CSV, JSON Lines or nginx/Apache access log, plain or .gz) instead of the scenarios; needs --limit and --window (per key)")
	fl.StringVar(&t.format, "traffic-format", "auto", "format of --traffic: auto, csv, jsonl or access-log")
	fl.StringVar(&t.keyField, "key-field", "", "column or field holding the client key (default key; access logs: remote_addr, or remote_user, uri, path, http_user_agent, extra1, ...)")
	fl.StringVar(&t.timeField, "time-field", "", "column or field holding the time (default timestamp; access logs: time_local)")
	fl.StringVar(&t.costField, "cost-field", "", "column or field holding the cost (default cost when present, else 1; access logs: body_bytes_sent)")
	fl.StringVar(&t.timeUnit, "time-unit", "auto", "how --time-field is written: auto, rfc3339, s, ms, us or ns")
	fl.BoolVar(&t.strict, "strict", false, "stop at the first malformed line of --traffic (default: count it, show the first few, go on)")
	fl.IntVar(&t.pipeline, "pipeline", replay.DefaultPipeline, "decisions per round trip when replaying --traffic")
}

// trafficOnly are the flags that mean something only with --traffic.
var trafficOnly = []string{"traffic-format", "key-field", "time-field", "cost-field", "time-unit", "strict", "pipeline"}

// replayConfig turns run's flags into a replay.Config and checks it.
func (f *runFlags) replayConfig() (replay.Config, error) {
	t := f.traffic
	cfg := replay.Config{Algorithms: f.algorithms, Limit: limit.Limit{Count: f.limit, Window: f.window}, Cost: f.cost,
		Source: t.path, Name: "traffic", Pipeline: t.pipeline,
		Timeout: f.timeout, OnError: harness.ErrorPolicy(f.onError), MaxOutage: f.maxOutage,
		Traffic: scenarios.TrafficOptions{Format: scenarios.TrafficFormat(t.format), KeyField: t.keyField,
			TimeField: t.timeField, CostField: t.costField, TimeUnit: scenarios.TimeUnit(t.timeUnit), Strict: t.strict}}
	switch {
	case len(f.scenarios) > 0 || len(f.scenarioFiles) > 0:
		return cfg, usagef("--traffic: replays the file alone; leave out --scenarios and --scenario-file")
	case f.clock != string(harness.VirtualClock):
		return cfg, usagef("--clock: --traffic replays in virtual time only, got %s", f.clock)
	case t.pipeline < 1:
		return cfg, usagef("--pipeline: must be >= 1, got %d", t.pipeline)
	case f.limit == 0: // run's default: each scenario's own, and a traffic file has none
		return cfg, usagef("--limit: required with traffic (cost units per window per key)")
	case f.window == 0:
		return cfg, usagef("--window: required with traffic")
	}
	if _, err := f.format.get(); err != nil {
		return cfg, err
	}
	return cfg, flagError(cfg.Validate(), nil)
}

// runTraffic is `run --traffic`: open the file, replay it, publish.
func runTraffic(c *cobra.Command, f *runFlags, stdout, stderr io.Writer) error {
	cfg, err := f.replayConfig()
	if err != nil {
		return err
	}
	file, err := os.Open(f.traffic.path)
	if err != nil {
		return usagef("--traffic: %w", err)
	}
	defer func() { _ = file.Close() }() // read only: nothing to flush
	if st, err := file.Stat(); err != nil || st.IsDir() {
		return usagef("--traffic: %s: not a readable file", f.traffic.path)
	} else if cfg.Size = st.Size(); cfg.Size == 0 {
		return usagef("--traffic: %s: %w", f.traffic.path, scenarios.ErrEmptyTraffic)
	}
	cfg.RunID = server.NewRunID()
	out, err := outputDir(f.out, cfg.RunID, f.force)
	if err != nil {
		return err
	}
	rd, err := openRedis(c, &f.redis, stderr)
	if err != nil {
		return err
	}
	defer closeRedis(rd, stderr)
	if err := makeOut(out); err != nil {
		return err
	}
	decisions := filepath.Join(out, "decisions.jsonl")
	df, err := os.Create(decisions)
	if err != nil {
		return usagef("--out: %w", err)
	}
	log := measure.NewDecisionLog(df)
	res, runErr := replay.Run(c.Context(), rd, file, cfg, log, stderr)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if res == nil { // nothing was replayed: leave no results behind
		_ = os.Remove(decisions) // tidying after a failed replay, whose error is the one returned
		_ = os.Remove(out)       // only when empty
		return flagError(runErr, nil)
	}
	return publish(stdout, stderr, "run", out, res.DurationMS, runErr,
		func(dir string) error { return reports.WriteDir(dir, res) },
		f.format.render(res))
}
