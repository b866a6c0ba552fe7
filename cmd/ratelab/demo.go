package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/internal/live"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

// DemoFormats are the stdout formats of `ratelab demo`.
var demoFormats = []string{"table", "json"}

type demoFlags struct {
	redis      redisFlags
	algorithms []string
	limit      int64
	window     time.Duration
	lead       time.Duration
	explain    bool
	format     string
	out        string
	force      bool
}

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &demoFlags{}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Watch a boundary burst hit every algorithm, live, on a real Redis",
		Long: `demo is seed 001's harness as a live show, in real time: ratelab parks just
before a window boundary on the Redis server's clock (with a countdown), fires
a full burst of --limit requests just before the boundary and another just
after it (at -W/10 and +W/10), at every algorithm at once, and draws a timeline
per algorithm as the answers arrive — accepted and denied requests, and the
count in the trailing window against the limit. Then it prints the table and
writes results.json, decisions.jsonl, plots, report.md and report.html to
--out, like run --clock redis --scenarios boundary-burst.

--explain adds what happened and why, per algorithm, from the measured
numbers. On a terminal the timeline redraws in place; otherwise the output is
plain lines. With --format json the results go to stdout and the show to
stderr. With the default 10s window it takes 12 to 25 seconds.`,
		Example: `  ratelab demo
  ratelab demo --explain
  ratelab demo --window 2s --algorithms fixed-window,sliding-log,sliding-counter
  ratelab demo --format json > demo.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runDemo(c, f, stdout, stderr) },
	}
	fl := c.Flags()
	f.redis.add(c)
	fl.StringSliceVar(&f.algorithms, "algorithms", nil, "algorithms to show, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.Int64Var(&f.limit, "limit", harness.DefaultDemoLimit, "cost units per window: also the size of each burst")
	fl.DurationVar(&f.window, "window", harness.DefaultDemoWindow, "window length; the bursts come W/10 before and after the boundary")
	fl.DurationVar(&f.lead, "lead", harness.DefaultDemoLead, "shortest countdown before the first burst")
	fl.BoolVar(&f.explain, "explain", false, "tell what happened and why, per algorithm, from the measured numbers")
	fl.StringVar(&f.format, "format", "table", "what to print on stdout: table or json")
	fl.StringVar(&f.out, "out", "", "directory for results.json, decisions.jsonl, plots, report.md and report.html (default results/<run id>); it must be new or empty")
	fl.BoolVar(&f.force, "force", false, "replace the results of an earlier run in --out")
	return c
}

func (f *demoFlags) check() error {
	for _, a := range f.algorithms {
		if !slices.Contains(algorithms.Names(), a) {
			return usagef("--algorithms: unknown algorithm %q (known: %s)", a, strings.Join(algorithms.Names(), ", "))
		}
	}
	switch {
	case f.limit < 1:
		return usagef("--limit: must be >= 1, got %d", f.limit)
	case f.limit > 1000:
		return usagef("--limit: at most 1000 for a demo (two bursts of --limit requests), got %d", f.limit)
	case f.window < 100*time.Millisecond:
		return usagef("--window: must be >= 100ms, got %s", f.window)
	case f.window > 10*time.Minute:
		return usagef("--window: at most 10m for a live demo, got %s", f.window)
	case f.lead < 0:
		return usagef("--lead: must be >= 0, got %s", f.lead)
	case !slices.Contains(demoFormats, f.format):
		return usagef("--format: unknown format %q (want table or json)", f.format)
	}
	return nil
}

func runDemo(c *cobra.Command, f *demoFlags, stdout, stderr io.Writer) error {
	if err := f.check(); err != nil {
		return err
	}
	runID := engine.NewRunID()
	rd, out, err := openOut(c, &f.redis, f.out, runID, f.force, stderr)
	if err != nil {
		return err
	}
	defer rd.Close()

	// the show goes to stdout, unless stdout carries the JSON results
	show := stdout
	if f.format == "json" {
		show = stderr
	}
	tty, width := terminal(show)

	df, err := os.Create(filepath.Join(out, "decisions.jsonl"))
	if err != nil {
		return usagef("--out: %w", err)
	}
	log := measure.NewDecisionLog(df)
	live := live.NewDemo(show, tty, width)
	live.Start()
	res, runErr := harness.Demo(c.Context(), rd, harness.DemoConfig{
		Algorithms: f.algorithms, Limit: f.limit, Window: f.window, Lead: f.lead, RunID: runID,
	}, live, log)
	live.Stop()
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if err := reports.WriteDir(out, res); err != nil {
		return fmt.Errorf("write results to %s: %w", out, err)
	}
	if f.format == "json" {
		if err := reports.Write(stdout, "json", res); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout)
		if err := reports.Write(stdout, "table", res); err != nil {
			return err
		}
	}
	if f.explain {
		cols := width
		if cols <= 0 {
			cols = 100 // not a terminal
		}
		fmt.Fprintln(show)
		for _, p := range reports.Explain(res) {
			fmt.Fprintln(show, wrap(p, max(cols, 60)))
		}
	}
	fmt.Fprintf(stderr, "ratelab: results in %s (results.json, decisions.jsonl, report.md, report.html, plots) — %.1fs\n",
		out, float64(res.DurationMS)/1000)
	if runErr != nil {
		return fmt.Errorf("demo stopped early (results marked incomplete): %w", runErr)
	}
	return nil
}

// terminal reports whether w is a terminal, and its width in columns (0
// when unknown).
func terminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return true, 0
	}
	return true, width
}

// wrap breaks s into lines of at most width columns at spaces, followed by
// a blank line.
func wrap(s string, width int) string {
	var b strings.Builder
	col := 0
	for _, word := range strings.Fields(s) {
		n := len([]rune(word))
		if col > 0 && col+1+n > width {
			b.WriteByte('\n')
			col = 0
		} else if col > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	b.WriteByte('\n')
	return b.String()
}
