package main

import (
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/capacity"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/publish"
)

// capacityFlags are capacity's flags: the study's own bind to capacity.Config.
type capacityFlags struct {
	commonFlags
	target    targetFlags
	cfg       capacity.Config
	counts    []int64       // --limits, per --window, into cfg.Limits
	window    time.Duration // --window
	precision time.Duration // --precision
}

func newCapacityCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &capacityFlags{}
	c := command("capacity", "Measure Redis memory per key at each limit and project it to many active keys",
		func(c *cobra.Command) error { return runCapacity(c, f, stdout, stderr) })
	fl := c.Flags()
	f.addCommon(c, "directory for results.json, report.md and plots (default results/<run id>); it must be new or empty", "run")
	f.target.addMany(c)
	fl.StringSliceVar(&f.cfg.Algorithms, "algorithms", nil, "algorithms to measure, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.Int64SliceVar(&f.counts, "limits", capacity.DefaultCounts, "limits (cost units per window) to fill keys to, comma-separated")
	fl.IntVar(&f.cfg.Keys, "keys", capacity.DefaultKeys, "N: keys per algorithm and limit for the used_memory delta (scaled down by --budget)")
	fl.Int64Var(&f.cfg.ActiveKeys, "active-keys", capacity.DefaultActiveKeys, "M: active keys to project the memory for")
	windowVar(fl, &f.window, "window", capacity.DefaultWindow, "window of the limits; keys get this TTL, so it must outlast the run")
	fl.DurationVar(&f.precision, "precision", 0, "bucketed-hash block length (default window/10)")
	fl.Int64Var(&f.cfg.Budget, "budget", capacity.DefaultBudget, "most script calls to fill one algorithm and limit; N is scaled down to fit")
	return c
}

func runCapacity(c *cobra.Command, f *capacityFlags, stdout, stderr io.Writer) error {
	if err := f.target.load(c, nil); err != nil {
		return err
	}
	if err := f.target.atomicOnly(c, "capacity", f.cfg.Algorithms); err != nil {
		return err
	}
	cfg := f.cfg
	cfg.Limits = capacity.Limits(f.counts, f.window, f.precision)
	cfg.Targets = f.target.targets()
	cfg.RunID = server.NewRunID()
	if err := cfg.Validate(); err != nil {
		return flagError(c.Flags(), err)
	}
	l, err := f.start(c, &f.target, cfg.RunID, false, stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	res, runErr := capacity.Run(c.Context(), l.Redis, cfg, stderr)
	return publish.Publish(c.Context(), stdout, stderr, "capacity", l.Dir, res, res.DurationMS, runErr, f.format.Renderer(res))
}
