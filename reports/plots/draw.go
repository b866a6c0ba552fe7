package plots

import (
	"path/filepath"
	"runtime"
	"sync"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

// exts are the two files of each plot: the PNG report.md links to and the
// SVG twin report.html inlines.
var exts = []string{".png", ".svg"}

// DrawRun draws a run's plots into dir (which exists), PNG and SVG each:
// trailing-<scenario> for each scenario with a row that has a
// trailing-window series (traffic replays), timeline-<scenario> for each
// scenario with a row that has a timeline, and ratio when there are rows.
// Plots early drew while the run went on are written as drawn (a nil
// early draws them all). The plots are drawn concurrently (drawAll). It
// returns the PNG names in that order, and stops at the first error (of
// the plots, the first in that order) wrapped with the file's path.
func DrawRun(dir string, r *measure.Results, early *Early) ([]string, error) {
	file := func(name string) string { return filepath.Join(dir, name) }
	var plots []string
	var draws []func() error // each plot's PNG and SVG, drawn concurrently
	for _, sc := range scenariosWithTrailing(r) {
		base := "trailing-" + reports.FileSafe(sc)
		for _, ext := range exts {
			draws = append(draws, func() error {
				return early.save(earlyKey{"trailing", sc, ext}, file(base+ext), func() error { return PlotTrailing(r, sc, file(base+ext)) })
			})
		}
		plots = append(plots, base+".png")
	}
	for _, sc := range scenariosWithTimeline(r) {
		base := "timeline-" + reports.FileSafe(sc)
		for _, ext := range exts {
			draws = append(draws, func() error {
				return early.save(earlyKey{"timeline", sc, ext}, file(base+ext), func() error { return PlotTimeline(r, sc, file(base+ext)) })
			})
		}
		plots = append(plots, base+".png")
	}
	if len(r.Results) > 0 {
		for _, ext := range exts {
			draws = append(draws, func() error { return PlotRatio(r, file("ratio"+ext)) })
		}
		plots = append(plots, "ratio.png")
	}
	early.stop() // what it has not started is drawn here, on every core
	return plots, drawAll(draws)
}

// DrawBench draws a bench's plots into dir (which exists), PNG and SVG
// each: latency-<path> (PlotLatencyCDF) for each path with a latency CDF,
// and throughput (PlotThroughput) when there are rows. It returns the PNG
// names in that order and stops at the first error.
func DrawBench(dir string, r *measure.BenchResults) ([]string, error) {
	file := func(name string) string { return filepath.Join(dir, name) }
	var plots []string
	for _, path := range reports.BenchPaths(r) {
		if !pathHasCDF(r, path) {
			continue
		}
		base := "latency-" + reports.FileSafe(path)
		for _, ext := range exts {
			if err := PlotLatencyCDF(r, path, file(base+ext)); err != nil {
				return nil, err
			}
		}
		plots = append(plots, base+".png")
	}
	if len(r.Results) > 0 {
		for _, ext := range exts {
			if err := PlotThroughput(r, file("throughput"+ext)); err != nil {
				return nil, err
			}
		}
		plots = append(plots, "throughput.png")
	}
	return plots, nil
}

// DrawCapacity draws memory.png and memory.svg (PlotCapacity) into dir
// (which exists) when r has rows, and returns the PNG names.
func DrawCapacity(dir string, r *measure.CapacityResults) ([]string, error) {
	if len(r.Results) == 0 {
		return nil, nil
	}
	for _, ext := range exts {
		if err := PlotCapacity(r, filepath.Join(dir, "memory"+ext)); err != nil {
			return nil, err
		}
	}
	return []string{"memory.png"}, nil
}

// verifyCE is r's counter-example; nil when there is none (or no r).
func verifyCE(r *measure.VerifyReport) *measure.CounterExample {
	if r == nil {
		return nil
	}
	return r.CounterExample
}

// DrawVerify draws a verification's plots into dir (which exists), PNG
// and SVG each: counterexample-found (PlotFoundCounterExample: the worst
// window as found, which the verdict's ratio is of) when the
// counter-example was shrunk and keeps it, counterexample
// (PlotCounterExample) when r has a counter-example with decisions,
// families (PlotFamilies) when a family has a ratio. It returns the PNG
// names in that order (the counter-example first) and stops at the first
// error.
func DrawVerify(dir string, r *measure.VerifyReport) ([]string, error) {
	var plots []string
	if c := verifyCE(r); c != nil && c.Found != nil && len(c.Found.Decisions) > 0 && len(c.Decisions) > 0 {
		for _, ext := range exts {
			if err := PlotFoundCounterExample(r, filepath.Join(dir, "counterexample-found"+ext)); err != nil {
				return nil, err
			}
		}
		plots = append(plots, "counterexample-found.png")
	}
	if r != nil && r.CounterExample != nil && len(r.CounterExample.Decisions) > 0 {
		for _, ext := range exts {
			if err := PlotCounterExample(r, filepath.Join(dir, "counterexample"+ext)); err != nil {
				return nil, err
			}
		}
		plots = append(plots, "counterexample.png")
	}
	if r != nil && hasFamilyRatio(r) {
		for _, ext := range exts {
			if err := PlotFamilies(r, filepath.Join(dir, "families"+ext)); err != nil {
				return nil, err
			}
		}
		plots = append(plots, "families.png")
	}
	return plots, nil
}

// hasFamilyRatio says whether PlotFamilies has a bar to draw.
func hasFamilyRatio(r *measure.VerifyReport) bool {
	for _, f := range r.Families {
		if f.Trials > 0 && f.Family != "isolation" && finite(f.MaxRatio) {
			return true
		}
	}
	return false
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
