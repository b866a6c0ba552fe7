package publish

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/plots"
)

// WriteResultsJSON writes dir's results.json alone: r, a
// *measure.Results, *measure.CapacityResults or *measure.BenchResults,
// indented as WriteDir, WriteCapacityDir and WriteBenchDir write it. It is
// what a command stopped by Ctrl-C leaves: a few milliseconds, where the
// plots and reports take seconds on a loaded machine (1.3-4.8 s after
// the signal, measured); Rerender writes them from it later. It
// creates dir (and its parents). A nil r, or one of another type, is an
// error; else errors as WriteFile's.
func WriteResultsJSON(dir string, r any) error {
	if e, ok := r.(*plots.Drawn); ok {
		r = e.Results
	}
	switch v := r.(type) {
	case *measure.Results:
		if v == nil {
			return fmt.Errorf("publish: no results to write")
		}
	case *measure.CapacityResults:
		if v == nil {
			return fmt.Errorf("publish: no capacity results to write")
		}
	case *measure.BenchResults:
		if v == nil {
			return fmt.Errorf("publish: no bench results to write")
		}
	default:
		return fmt.Errorf("publish: results.json cannot hold %T", r)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return writeFile(filepath.Join(dir, "results.json"), func(w io.Writer) error { return reports.WriteJSON(w, r) })
}

// WriteResultsDir writes the results directory dir of r in full
// (*measure.Results: WriteDir; *measure.CapacityResults: WriteCapacityDir;
// *measure.BenchResults: WriteBenchDir) or, when brief, results.json alone
// (WriteResultsJSON); a run's results with the plots drawn while it ran
// (plots.Early.Of) as WriteDir. Errors as theirs; r of another type is an error.
func WriteResultsDir(dir string, r any, brief bool) error {
	if brief {
		return WriteResultsJSON(dir, r)
	}
	switch v := r.(type) {
	case *plots.Drawn:
		return writeDir(dir, v.Results, v.Early)
	case *measure.Results:
		return WriteDir(dir, v)
	case *measure.CapacityResults:
		return WriteCapacityDir(dir, v)
	case *measure.BenchResults:
		return WriteBenchDir(dir, v)
	}
	return fmt.Errorf("publish: no results directory holds %T", r)
}
