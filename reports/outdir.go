package reports

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
)

// ResultFiles are the names (filepath.Match patterns) of the files a
// ratelab command writes to its results directory: a directory holding
// only these, or nothing, is ratelab's.
var ResultFiles = []string{"results.json", "decisions.jsonl", "report.md", "report.html", "verify.json", "*.png", "*.svg"}

// OutDir returns the results directory of a run: out, or results/<runID>
// when out is empty. It creates nothing (see PrepareOut). An out that
// exists and is not empty is refused unless force, so that old and new
// results never mix; with force, the files of an earlier ratelab run are
// removed first, and anything else in it (a file not in ResultFiles, or a
// directory) is refused even then. Errors are *field.Error naming "out".
func OutDir(out, runID string, force bool) (string, error) {
	if out == "" {
		return filepath.Join("results", runID), nil
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) == 0 {
		return out, nil // missing or empty: PrepareOut creates or fills it
	}
	var foreign []string
	for _, e := range entries {
		if !isResultFile(e.Name()) || e.IsDir() {
			foreign = append(foreign, e.Name())
		}
	}
	switch {
	case len(foreign) > 0:
		return "", field.Errorf("out", "%s holds files that are not ratelab results (%s): choose an empty or new directory", out, strings.Join(foreign[:min(len(foreign), 3)], ", "))
	case !force:
		return "", field.Errorf("out", "%s already holds results (%s); pass --force to replace them, or choose a new directory", out, entries[0].Name())
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(out, e.Name())); err != nil {
			return "", field.Errorf("out", "%w", err)
		}
	}
	return out, nil
}

func isResultFile(name string) bool {
	for _, p := range ResultFiles {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// PrepareOut is OutDir, then creates the directory (and its parents) and
// checks that files can be written there (a probe file is created and
// removed), so that a bad or read-only out stops a command before it
// measures anything. undo removes what a command then wrote nothing
// useful into: the directory's decisions.jsonl, and the directory itself
// when PrepareOut created it and it is empty; call it when the command
// stops before it has results (Redis unreachable, nothing replayed).
// Errors are *field.Error naming "out".
func PrepareOut(out, runID string, force bool) (dir string, undo func(), err error) {
	if dir, err = OutDir(out, runID, force); err != nil {
		return "", nil, err
	}
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, field.Errorf("out", "%s is not writable: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".ratelab-probe-*")
	if err != nil {
		return "", nil, field.Errorf("out", "%s is not writable: %w", dir, err)
	}
	_ = f.Close() // an empty probe, removed next: the removal's error says enough
	if err := os.Remove(f.Name()); err != nil {
		return "", nil, field.Errorf("out", "%w", err)
	}
	undo = func() {
		// tidying after a command that stopped, whose error is the one returned
		_ = os.Remove(filepath.Join(dir, "decisions.jsonl"))
		if os.IsNotExist(statErr) {
			_ = os.Remove(dir) // only if still empty
		}
	}
	return dir, undo, nil
}

// CreateDecisionLog creates dir (and its parents) and dir/decisions.jsonl,
// the log every decision streams to, replacing an earlier one. The caller
// closes the log. Errors are *field.Error naming "out".
func CreateDecisionLog(dir string) (*measure.DecisionLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, field.Errorf("out", "%w", err)
	}
	f, err := os.Create(filepath.Join(dir, "decisions.jsonl"))
	if err != nil {
		return nil, field.Errorf("out", "%w", err)
	}
	return measure.NewDecisionLog(f), nil
}

// WriteFile creates the file path (replacing it) and writes it with write.
// A file that cannot be created is a *field.Error naming "out"; the errors
// of write and of closing the file are returned as they are.
func WriteFile(path string, write func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return field.Errorf("out", "%w", err)
	}
	if err := write(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// WriteVerifyDir writes a verify's results to dir (which exists):
// verify.json (r in JSON), counterexample.png and .svg when r has a
// counter-example with decisions (PlotCounterExample), families.png and
// .svg when a family has a ratio (PlotFamilies), and report.html
// (WriteVerifyHTMLFigures, the SVGs inlined, the counter-example first).
// Errors as WriteFile's, or the plots'.
func WriteVerifyDir(dir string, r *measure.VerifyReport) error {
	if err := WriteFile(filepath.Join(dir, "verify.json"), func(w io.Writer) error { return Render(w, JSON, r) }); err != nil {
		return err
	}
	var plots []string
	if r != nil && r.CounterExample != nil && len(r.CounterExample.Decisions) > 0 {
		for _, ext := range []string{".png", ".svg"} {
			if err := PlotCounterExample(r, filepath.Join(dir, "counterexample"+ext)); err != nil {
				return err
			}
		}
		plots = append(plots, "counterexample.png")
	}
	if r != nil && hasFamilyRatio(r) {
		for _, ext := range []string{".png", ".svg"} {
			if err := PlotFamilies(r, filepath.Join(dir, "families"+ext)); err != nil {
				return err
			}
		}
		plots = append(plots, "families.png")
	}
	figs, err := readFigures(dir, plots)
	if err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return WriteVerifyHTMLFigures(w, r, figs) })
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

// FinishVerify writes what a verification leaves in dir once it has
// stopped with r and runErr (dir "" writes nothing). log, the verification's
// decisions.jsonl (nil when there is none), is closed first: closing flushes
// it, so an error closing it means the record misses decisions, and it is
// joined to runErr. Then, when runErr is nil, r is written (WriteVerifyDir);
// else verify.json holds incomplete(runErr), what was asked and why it
// stopped, marked incomplete, so that dir never lacks its record. It returns
// runErr with the log's error joined, and the error writing the files (as
// WriteFile's).
func FinishVerify(dir string, log *measure.DecisionLog, r *measure.VerifyReport, runErr error, incomplete func(error) *measure.VerifyReport) (error, error) {
	if log != nil {
		if err := log.Close(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("write %s: %w", filepath.Join(dir, "decisions.jsonl"), err))
		}
	}
	switch {
	case dir == "":
		return runErr, nil
	case runErr != nil:
		return runErr, WriteFile(filepath.Join(dir, "verify.json"), func(w io.Writer) error { return Render(w, JSON, incomplete(runErr)) })
	}
	return nil, WriteVerifyDir(dir, r)
}
