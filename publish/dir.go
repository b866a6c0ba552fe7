package publish

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/plots"
)

// WriteDir writes a run directory: it creates dir (and parents), then
// writes results.json (as reports' "json" format), the run's plots
// (plots.DrawRun: trailing-<scenario>, timeline-<scenario> and ratio, PNG
// and SVG each), report.html (self-contained, the SVGs inlined:
// reports.WriteHTML) and report.md referencing the PNGs
// (reports.WriteReport). It stops at the first error (of the plots, the
// first in that order) and returns it wrapped with the file's path.
func WriteDir(dir string, r *measure.Results) error { return writeDir(dir, r, nil) }

// writeDir is WriteDir, writing the plots early drew instead of drawing
// them.
func writeDir(dir string, r *measure.Results, early *plots.Early) error {
	if r == nil {
		return fmt.Errorf("publish: no results to write")
	}
	if err := createWithResults(dir, r); err != nil {
		return err
	}
	names, err := plots.DrawRun(dir, r, early)
	if err != nil {
		return err
	}
	figs, err := readFigures(dir, names)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return reports.WriteHTML(w, r, figs) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.md"), func(w io.Writer) error { return reports.WriteReport(w, r, names) })
}

// WriteBenchDir writes a bench run directory: results.json, its plots
// (plots.DrawBench: latency-<path> and throughput, PNG and SVG each),
// report.html and report.md with the table, every run, and the plots. It
// creates dir and stops at the first error.
func WriteBenchDir(dir string, r *measure.BenchResults) error {
	if r == nil {
		return fmt.Errorf("publish: no bench results to write")
	}
	if err := createWithResults(dir, r); err != nil {
		return err
	}
	names, err := plots.DrawBench(dir, r)
	if err != nil {
		return err
	}
	figs, err := readFigures(dir, names)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return reports.WriteBenchHTML(w, r, figs) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.md"), func(w io.Writer) error { return reports.WriteBenchReport(w, r, names) })
}

// WriteCapacityDir writes a capacity run directory: results.json,
// memory.png and memory.svg (plots.DrawCapacity) when there are rows,
// report.html and report.md. It creates dir and stops at the first error.
func WriteCapacityDir(dir string, r *measure.CapacityResults) error {
	if r == nil {
		return fmt.Errorf("publish: no capacity results to write")
	}
	if err := createWithResults(dir, r); err != nil {
		return err
	}
	names, err := plots.DrawCapacity(dir, r)
	if err != nil {
		return err
	}
	figs, err := readFigures(dir, names)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return reports.WriteCapacityHTML(w, r, figs) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.md"), func(w io.Writer) error { return reports.WriteCapacityReport(w, r, names) })
}

// WriteVerifyDir writes a verify's results to dir (which exists):
// verify.json (r in JSON), its plots (plots.DrawVerify: the counter-example
// as found and shrunk, families; PNG and SVG each) and report.html
// (reports.WriteVerifyHTMLFigures, the SVGs inlined, the counter-example
// first, as found beside shrunk). Errors as
// outdir.WriteFile's, or the plots'.
func WriteVerifyDir(dir string, r *measure.VerifyReport) error {
	if err := outdir.WriteFile(filepath.Join(dir, "verify.json"), func(w io.Writer) error { return reports.Render(w, reports.JSON, r) }); err != nil {
		return err
	}
	names, err := plots.DrawVerify(dir, r)
	if err != nil {
		return err
	}
	figs, err := readFigures(dir, names)
	if err != nil {
		return err
	}
	if len(figs) > 1 && figs[0].Name == "counterexample-found" && figs[1].Name == "counterexample" {
		figs[0].Beside, figs[1].Beside = true, true // the headline's window, the shrunk trace beside it
	}
	return outdir.WriteFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return reports.WriteVerifyHTMLFigures(w, r, figs) })
}

// createWithResults creates dir (and its parents) and writes its
// results.json with r.
func createWithResults(dir string, r any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return writeFile(filepath.Join(dir, "results.json"), func(w io.Writer) error { return reports.WriteJSON(w, r) })
}

// writeFile writes path with write (outdir.Create: a temporary file renamed
// over path); errors are wrapped with the path.
func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := outdir.Create(path, true) // atomic, never through a symlink
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer func() {
		if err != nil {
			f.Abort()
		} else if cerr := f.Close(); cerr != nil {
			err = fmt.Errorf("publish: %w", cerr)
		}
	}()
	if err := write(f); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) { // already names the file
			return fmt.Errorf("publish: %w", err)
		}
		return fmt.Errorf("publish: %s: %w", path, err)
	}
	return nil
}

// readFigures reads the SVG twin of each plot (paths relative to dir, any
// extension: "ratio.png" reads ratio.svg).
func readFigures(dir string, names []string) ([]reports.Figure, error) {
	var figs []reports.Figure
	for _, p := range names {
		base := strings.TrimSuffix(p, filepath.Ext(p))
		svg, err := os.ReadFile(filepath.Join(dir, base+".svg"))
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		name := filepath.Base(base)
		figs = append(figs, reports.Figure{Name: name, SVG: svg, Caption: reports.FigureCaption(name)})
	}
	return figs, nil
}
