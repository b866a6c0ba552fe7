package demo

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/demo/live"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish"
	"github.com/ratelab/ratelab/reports"
)

// ParsePace reads a Config.Pace written as a factor, "20x" or "20"
// (spaces around it ignored). Errors name field "pace"; the value is
// checked by Config.Validate.
func ParsePace(s string) (float64, error) {
	pace, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "x"), 64)
	if err != nil {
		return 0, field.Errorf("pace", "want a factor such as 20x, got %q", s)
	}
	return pace, nil
}

// Show is `ratelab demo` from its Redis to its files: the show, live,
// and the results.
type Show struct {
	// Stdout gets the results (Render) and the show, unless JSON; then
	// the show goes to Stderr, which also gets where the results are.
	Stdout, Stderr io.Writer
	JSON           bool
	// Render returns the writer of the results to Stdout (after a blank
	// line, unless JSON).
	Render func(results any) func(io.Writer) error
	// Explain also tells, under the show, what happened per algorithm and
	// why (reports.Explain).
	Explain bool
	// Out is the results directory (publish.WriteResults).
	Out string
	// Decisions runs the demo with its decision log (nil for none), made
	// and closed around it, and returns the demo's error or the log's.
	Decisions func(run func(log *measure.DecisionLog) error) error
}

// Run runs the demo of cfg on rd (Run), shown live on the terminal of the
// show's writer (live.NewDemo), writes its results to s.Out and s.Stdout,
// and says where they are. A demo stopped early is the error (its results
// written, marked incomplete); else errors are writing the results'.
func (s Show) Run(ctx context.Context, rd *server.Redis, cfg Config) error {
	show := s.Stdout
	if s.JSON {
		show = s.Stderr
	}
	tty, width := live.Terminal(show)
	view := live.NewDemo(show, tty, width)
	var res *measure.Results
	runErr := s.Decisions(func(log *measure.DecisionLog) (err error) {
		view.Start()
		defer view.Stop()
		res, err = Run(ctx, rd, cfg, view, log)
		return err
	})
	files, err := publish.WriteResults(ctx, s.Out, res)
	if err != nil {
		return err
	}
	if !s.JSON {
		fmt.Fprintln(s.Stdout)
	}
	if err := s.Render(res)(s.Stdout); err != nil {
		return err
	}
	if s.Explain {
		_ = live.WriteExplained(show, reports.Explain(res), width)
	}
	fmt.Fprintf(s.Stderr, "ratelab: results in %s (%s) — %.1fs\n", s.Out, files, float64(res.DurationMS)/1000)
	if runErr != nil {
		return fmt.Errorf("demo stopped early (results marked incomplete): %w", runErr)
	}
	return nil
}
