package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/demo"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/reports"
)

// demoFlags are demo's flags: most go straight into the demo.Config.
type demoFlags struct {
	commonFlags
	cfg     demo.Config
	explain bool
	pace    string
}

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &demoFlags{}
	c := command("demo", "Watch a boundary burst hit every algorithm, live, on a real Redis",
		func(c *cobra.Command) error { return runDemo(c, f, stdout, stderr) })
	fl := c.Flags()
	f.addCommon(c, "directory for results.json, plots, report.md and report.html (default results/<run id>); it must be new or empty", "run", reports.Table, reports.JSON) // the show needs a terminal, not a document
	f.out.addDecisions(c)
	fl.StringSliceVar(&f.cfg.Algorithms, "algorithms", nil, "algorithms to show, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	countVar(fl, &f.cfg.Limit.Count, "limit", demo.DefaultLimit.Count, "cost units per window: also the size of each burst")
	windowVar(fl, &f.cfg.Limit.Window, "window", demo.DefaultLimit.Window, "window length; the bursts come W/10 before and after the boundary")
	fl.DurationVar(&f.cfg.Lead, "lead", demo.DefaultLead, "shortest countdown before the first burst")
	fl.BoolVar(&f.explain, "explain", false, "tell what happened and why, per algorithm, from the measured numbers")
	fl.StringVar(&f.pace, "pace", "1x", "slow each burst down for a class to watch: 20x sends its requests 20 times further apart (50 over 1s instead of 50ms); the window and the bursts' times do not change")
	return c
}

func (f *demoFlags) check(c *cobra.Command) (err error) {
	if f.cfg.Limit == (limit.Limit{}) { // the zero Limit would mean the default in the library
		return usagef("--limit: must be >= 1, got 0")
	}
	if f.cfg.Pace, err = demo.ParsePace(f.pace); err != nil {
		return flagError(c.Flags(), err)
	}
	return flagError(c.Flags(), f.cfg.Validate())
}

func runDemo(c *cobra.Command, f *demoFlags, stdout, stderr io.Writer) error {
	if err := f.check(c); err != nil {
		return err
	}
	runID := server.NewRunID()
	l, err := f.start(c, nil, runID, false, stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	cfg := f.cfg
	cfg.RunID, cfg.Progress = runID, stderr
	show := demo.Show{Stdout: stdout, Stderr: stderr, JSON: f.format.Format == reports.JSON, Render: f.format.Renderer,
		Wide: f.format.Wide, Explain: f.explain, Input: c.InOrStdin(), Out: l.Dir, Decisions: f.out.logDecisions}
	return show.Run(c.Context(), l.Redis, cfg)
}
