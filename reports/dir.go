package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
)

// WriteReport writes report.md for r to w: a title, the run's configuration
// and Redis (mode, address, version), start time (UTC, RFC 3339) and
// duration, the Markdown results table with a key to its columns, the
// verdicts (rows whose ratio is above 1) and one Markdown image per entry of
// plots, in order. Plot paths are used as given (keep them relative to the
// report's directory) and the image's alt text is the file name without its
// extension. Errors come from w.
func WriteReport(w io.Writer, r *measure.Results, plots []string) error {
	if r == nil {
		return fmt.Errorf("reports: no results to write")
	}
	var b bytes.Buffer
	cmd := r.Command
	if cmd == "" {
		cmd = "run"
	}
	fmt.Fprintf(&b, "# ratelab %s report\n\n", escapeMarkdown(cmd))
	writeIncomplete(&b, r.Complete, r.Error, true)

	c := r.Config
	var items []string
	item := func(name, value string) { items = append(items, name+": "+value) }
	item("algorithms", orNone(codeList(c.Algorithms)))
	item("scenarios", orNone(codeList(c.Scenarios)))
	if c.Limit != 0 || c.WindowMS != 0 {
		item("limit override", fmt.Sprintf("%s per %s", orDefault(c.Limit), formatWindowOrDefault(c.WindowMS)))
	} else {
		item("limit override", "none (each scenario's own)")
	}
	item("clock", orNone(code(c.Clock)))
	item("seed", fmt.Sprint(c.Seed))
	item("key prefix", orNone(code(c.Prefix)))
	writeRunHeader(&b, r.Header, items)

	b.WriteString("\n## Results\n\n")
	if len(r.Results) == 0 {
		b.WriteString("No results.\n")
	} else {
		complete := *r
		complete.Complete = true // the INCOMPLETE line is already above
		if err := writeMarkdown(&b, &complete); err != nil {
			return err
		}
		if len(verdicts(r)) == 0 {
			b.WriteString("\nNo algorithm accepted more than its limit within any one window.\n")
		}
		b.WriteString("\n" + columnKey)
		if hasPerKey(r) {
			b.WriteString("\n" + perKeyColumns)
		}
	}

	if len(plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range plots {
			name := strings.TrimSuffix(path.Base(filepath.ToSlash(p)), path.Ext(p))
			fmt.Fprintf(&b, "![%s](%s)\n\n", escapeMarkdown(name), markdownURL(p))
		}
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	out = append(out, '\n')
	_, err := w.Write(out)
	return err
}

// columnKey explains the table's columns (DESIGN.md's metric definitions).
const columnKey = `Columns: *offered* and *accepted* sum request cost (cost units); *max in W*
is the largest accepted cost whose decision times fit in one window (t-W, t];
*ratio* = max in W / limit (above 1: the limit was exceeded); *ideal* is what an
exact sliding-window log accepts at the same times and *fidelity* = accepted /
ideal (below 1: legitimate traffic was refused); *memory* is MEMORY USAGE
(SAMPLES 0) summed over the algorithm's keys; *p50 µs* and *p99 µs* are decision
latencies; *errors* counts failed decisions.
`

// WriteDir writes a run directory: it creates dir (and parents), then
// writes results.json (as Write's "json" format), trailing-<scenario>.png
// and .svg for each scenario with a row that has a trailing-window series
// (traffic replays), timeline-<scenario>.png
// and .svg for each scenario with at least one row that has a timeline,
// ratio.png and ratio.svg when there are rows, report.html (self-contained,
// the SVGs inlined: see WriteHTML) and report.md referencing the PNGs.
// The plots are drawn concurrently (drawAll). It stops at the first error
// (of the plots, the first in the order above) and returns it wrapped with
// the file's path.
func WriteDir(dir string, r *measure.Results) error { return writeDir(dir, r, nil) }

// writeDir is WriteDir, writing the plots early drew (Early.take) instead
// of drawing them.
func writeDir(dir string, r *measure.Results, early *Early) error {
	if r == nil {
		return fmt.Errorf("reports: no results to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	file := func(name string) string { return filepath.Join(dir, name) }

	if err := writeFile(file("results.json"), func(w io.Writer) error { return writeJSON(w, r) }); err != nil {
		return err
	}

	var plots []string
	var draws []func() error // each plot's PNG and SVG, drawn concurrently
	for _, sc := range scenariosWithTrailing(r) {
		base := "trailing-" + fileSafe(sc)
		for _, ext := range []string{".png", ".svg"} {
			draws = append(draws, func() error {
				return early.save(earlyKey{"trailing", sc, ext}, file(base+ext), func() error { return PlotTrailing(r, sc, file(base+ext)) })
			})
		}
		plots = append(plots, base+".png")
	}
	for _, sc := range scenariosWithTimeline(r) {
		base := "timeline-" + fileSafe(sc)
		for _, ext := range []string{".png", ".svg"} {
			draws = append(draws, func() error {
				return early.save(earlyKey{"timeline", sc, ext}, file(base+ext), func() error { return PlotTimeline(r, sc, file(base+ext)) })
			})
		}
		plots = append(plots, base+".png")
	}
	if len(r.Results) > 0 {
		for _, ext := range []string{".png", ".svg"} {
			draws = append(draws, func() error { return PlotRatio(r, file("ratio"+ext)) })
		}
		plots = append(plots, "ratio.png")
	}
	early.stop() // what it has not started is drawn here, on every core
	if err := drawAll(draws); err != nil {
		return err
	}

	if err := writeHTMLDir(dir, r, plots); err != nil {
		return err
	}
	return writeFile(file("report.md"), func(w io.Writer) error { return WriteReport(w, r, plots) })
}

// writeFile writes path with write (outdir.Create: a temporary file renamed
// over path); errors are wrapped with the path.
func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := outdir.Create(path, true) // atomic, never through a symlink
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	defer func() {
		if err != nil {
			f.Abort()
		} else if cerr := f.Close(); cerr != nil {
			err = fmt.Errorf("reports: %w", cerr)
		}
	}()
	if err := write(f); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) { // already names the file
			return fmt.Errorf("reports: %w", err)
		}
		return fmt.Errorf("reports: %s: %w", path, err)
	}
	return nil
}

// scenariosWithTimeline lists, in first-appearance order, the scenarios
// with at least one row that has a timeline.
func scenariosWithTimeline(r *measure.Results) []string {
	var out []string
	seen := map[string]bool{}
	for _, row := range r.Results {
		if len(row.Timeline) > 0 && !seen[row.Scenario] {
			seen[row.Scenario] = true
			out = append(out, row.Scenario)
		}
	}
	return out
}

// fileSafe maps a scenario name to a file-name part: letters, digits,
// '-', '_' and '.' are kept, anything else becomes '_'.
func fileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			b[i] = '_'
		}
	}
	if len(b) == 0 || strings.Trim(string(b), ".") == "" {
		return "_"
	}
	return string(b)
}

func redisDesc(ri measure.RedisInfo) string {
	version := ri.Version
	if version == "" {
		version = "unknown version"
	}
	s := version
	if ri.Addr != "" {
		s += " at " + code(ri.Addr)
	}
	if ri.Mode != "" {
		s += " (" + ri.Mode + ")"
	}
	return s
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

func codeList(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = code(s)
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orDefault(n int64) string {
	if n == 0 {
		return "(scenario's limit)"
	}
	return fmt.Sprint(n)
}

func formatWindowOrDefault(ms int64) string {
	if ms == 0 {
		return "(scenario's window)"
	}
	return formatWindow(ms)
}

// markdownURL makes a relative path usable as a Markdown link target.
func markdownURL(p string) string {
	p = filepath.ToSlash(p)
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29").Replace(p)
}

// drawAll runs draws (each writes one plot file), up to GOMAXPROCS at once:
// a plot is drawn and encoded on one core, and the files do not depend on
// one another, so they are the same as drawn one after another. The error
// is the first in the order of draws; a draw after a failed one may still
// have written its file.
func drawAll(draws []func() error) error {
	errs := make([]error, len(draws))
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
	var wg sync.WaitGroup
	for i, draw := range draws {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = draw()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
