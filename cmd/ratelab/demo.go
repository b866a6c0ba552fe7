package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/demo"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/live"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

type demoFlags struct {
	redis      redisFlags
	algorithms []string
	limit      int64
	window     time.Duration
	lead       time.Duration
	explain    bool
	format     formatFlag
	out        string
	force      bool
}

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &demoFlags{}
	c := &cobra.Command{
		Use:     "demo",
		Short:   "Watch a boundary burst hit every algorithm, live, on a real Redis",
		Long:    helpText("demo", "long"),
		Example: helpText("demo", "example"),
		Args:    cobra.NoArgs,
		RunE:    func(c *cobra.Command, _ []string) error { return runDemo(c, f, stdout, stderr) },
	}
	fl := c.Flags()
	f.redis.add(c)
	f.redis.addEviction(c)
	fl.StringSliceVar(&f.algorithms, "algorithms", nil, "algorithms to show, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.Int64Var(&f.limit, "limit", demo.DefaultLimit.Count, "cost units per window: also the size of each burst")
	windowVar(fl, &f.window, "window", demo.DefaultLimit.Window, "window length; the bursts come W/10 before and after the boundary")
	fl.DurationVar(&f.lead, "lead", demo.DefaultLead, "shortest countdown before the first burst")
	fl.BoolVar(&f.explain, "explain", false, "tell what happened and why, per algorithm, from the measured numbers")
	f.format.add(c, reports.Table, reports.JSON) // the show needs a terminal, not a document
	fl.StringVar(&f.out, "out", "", "directory for results.json, decisions.jsonl, plots, report.md and report.html (default results/<run id>); it must be new or empty")
	fl.BoolVar(&f.force, "force", false, "replace the results of an earlier run in --out")
	return c
}

func (f *demoFlags) check() error {
	if _, err := f.format.get(); err != nil {
		return err
	}
	if f.limit == 0 && f.window == 0 { // the zero Limit would mean the default in the library
		return usagef("--limit: must be >= 1, got 0")
	}
	return flagError(f.config().Validate(), nil)
}

func (f *demoFlags) config() demo.Config {
	return demo.Config{Algorithms: f.algorithms, Limit: limit.Limit{Count: f.limit, Window: f.window}, Lead: f.lead}
}

func runDemo(c *cobra.Command, f *demoFlags, stdout, stderr io.Writer) error {
	if err := f.check(); err != nil {
		return err
	}
	runID := server.NewRunID()
	rd, out, err := openOut(c, &f.redis, f.out, runID, f.force, stderr)
	if err != nil {
		return err
	}
	defer closeRedis(rd, stderr)

	// the show goes to stdout, unless stdout carries the JSON results
	show := stdout
	format, _ := f.format.get() // checked
	if format == reports.JSON {
		show = stderr
	}
	tty, width := live.Terminal(show)

	df, err := os.Create(filepath.Join(out, "decisions.jsonl"))
	if err != nil {
		return usagef("--out: %w", err)
	}
	log := measure.NewDecisionLog(df)
	view := live.NewDemo(show, tty, width)
	view.Start()
	cfg := f.config()
	cfg.RunID = runID
	res, runErr := demo.Run(c.Context(), rd, cfg, view, log)
	view.Stop()
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if err := reports.WriteDir(out, res); err != nil {
		return fmt.Errorf("write results to %s: %w", out, err)
	}
	if format != reports.JSON {
		fmt.Fprintln(stdout)
	}
	if err := f.format.render(res)(stdout); err != nil {
		return err
	}
	if f.explain {
		cols := width
		if cols <= 0 {
			cols = 100 // not a terminal
		}
		fmt.Fprintln(show)
		for _, p := range reports.Explain(res) {
			fmt.Fprintln(show, live.Wrap(p, max(cols, 60)))
		}
	}
	fmt.Fprintf(stderr, "ratelab: results in %s (results.json, decisions.jsonl, report.md, report.html, plots) — %.1fs\n",
		out, float64(res.DurationMS)/1000)
	if runErr != nil {
		return fmt.Errorf("demo stopped early (results marked incomplete): %w", runErr)
	}
	return nil
}
