package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
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
	// Wide keeps the results table whole on a terminal (--wide); else a
	// terminal gets it fitted to its width, or, when the frame and the
	// table do not fit its height together, a line saying where it is.
	Wide bool
	// Explain also tells, under the show, what happened per algorithm and
	// why (reports.Explain): one algorithm a page when the show is on a
	// terminal and Input is one (live.PageExplained), else all at once.
	Explain bool
	// Input is where a person turns the explanation's pages (nil: never
	// paged).
	Input io.Reader
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
	tty, width, height := live.Terminal(show)
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
	if tty && !s.JSON && !s.Wide && width > 0 {
		err = s.fittedTable(res, width, height, view.Height())
	} else {
		err = s.Render(res)(s.Stdout)
	}
	if err != nil {
		return err
	}
	if s.Explain {
		ps := reports.Explain(res)
		if tty && s.Input != nil && live.IsTerminal(s.Input) {
			pages, names := explainPages(ps, res)
			_ = live.PageExplained(show, s.Input, pages, names, width-1)
		} else {
			_ = live.WriteExplained(show, ps, width)
		}
	}
	done := fmt.Sprintf("ratelab: results in %s (%s) — %.1fs", s.Out, files, float64(res.DurationMS)/1000)
	if errTTY, w, _ := live.Terminal(s.Stderr); errTTY && w > 0 {
		done = strings.TrimSuffix(live.Wrap(done, w-1), "\n")
	}
	fmt.Fprintln(s.Stderr, done)
	if runErr != nil {
		return fmt.Errorf("demo stopped early (results marked incomplete): %w", runErr)
	}
	return nil
}

// fittedTable writes the results table fitted to a terminal of width
// columns and height lines (0: unknown) under a frame of frame lines; when
// frame and table do not fit together, the frame (the demo's lesson) stays
// on screen: only the run's notes follow it, and a line saying how to
// print the table.
func (s Show) fittedTable(res *measure.Results, width, height, frame int) error {
	var b strings.Builder
	if err := reports.WriteTableFitted(&b, res, width-1); err != nil {
		return err
	}
	const below = 4 // the blank line above the table, where the results are, a prompt
	if height > 0 && frame+strings.Count(b.String(), "\n")+below > height {
		var short strings.Builder
		for _, n := range res.Notes { // how the run was made (paced, ...)
			short.WriteString(live.Wrap(n, width-1))
		}
		short.WriteString(live.Wrap(fmt.Sprintf(
			"The table does not fit this terminal under the picture: ratelab report %s prints it.", s.Out), width-1))
		_, err := io.WriteString(s.Stdout, short.String())
		return err
	}
	_, err := io.WriteString(s.Stdout, b.String())
	return err
}

// explainPages groups reports.Explain's paragraphs one algorithm a page,
// the opening paragraph on the first, and names each page's algorithm.
func explainPages(ps []string, res *measure.Results) ([][]string, []string) {
	var pages [][]string
	var names []string
	first := len(ps) - len(res.Results) // 1 when an opening paragraph leads
	for i, p := range ps {
		if i < first {
			continue
		}
		page := []string{p}
		if i == first {
			page = append(slices.Clone(ps[:first]), p)
		}
		pages = append(pages, page)
		names = append(names, res.Results[i-first].Algorithm)
	}
	return pages, names
}
