package publish

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/reports"
)

// Rerender is `ratelab report DIR`: it reads the results directory dir of
// any command — its results.json (run, demo, capacity, bench), or a
// verify's verify.json when it holds no results.json, of this ratelab or
// the one before — writes its files again (WriteDir, WriteCapacityDir,
// WriteBenchDir; a verify's report.html) and writes the results to w in
// format f. A dir that is not a directory (or is missing) is an error
// saying so ("report: DIR is not a directory"); a format the results do
// not take is a *field.Error naming "format", checked before anything is
// written; unreadable results are the reader's error (measure.ReadResults
// and the others).
func Rerender(w io.Writer, dir string, f reports.Format) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("report: %s is not a directory", dir)
	}
	_, errResults := os.Stat(filepath.Join(dir, "results.json"))
	_, errVerify := os.Stat(filepath.Join(dir, "verify.json"))
	if os.IsNotExist(errResults) && errVerify == nil {
		if err := f.Validate(reports.VerifyFormats...); err != nil {
			return err
		}
		rep, err := measure.ReadVerify(filepath.Join(dir, "verify.json"))
		if err != nil {
			return err
		}
		rep.Dir = dir
		if err := outdir.WriteFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return reports.WriteVerifyHTML(w, rep) }); err != nil {
			return err
		}
		return reports.Render(w, f, rep)
	}
	path := filepath.Join(dir, "results.json")
	switch command, err := measure.ResultsCommand(path); {
	case err != nil:
		return err
	case command == "capacity":
		return rerender(w, dir, f, measure.ReadCapacity, WriteCapacityDir)
	case command == "bench":
		return rerender(w, dir, f, measure.ReadBench, WriteBenchDir)
	}
	return rerender(w, dir, f, measure.ReadResults, WriteDir)
}

// rerender reads dir's results.json with read, writes dir again with
// writeDir and the results to w in format f.
func rerender[T any](w io.Writer, dir string, f reports.Format, read func(path string) (T, error), writeDir func(dir string, r T) error) error {
	res, err := read(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	if err := writeDir(dir, res); err != nil {
		return err
	}
	return reports.Render(w, f, res)
}
