package reports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
)

// WriteVerifyDir writes a verify's results to dir (which exists):
// verify.json (r in JSON), counterexample.png and .svg when r has a
// counter-example with decisions (PlotCounterExample), families.png and
// .svg when a family has a ratio (PlotFamilies), and report.html
// (WriteVerifyHTMLFigures, the SVGs inlined, the counter-example first).
// Errors as WriteFile's, or the plots'.
func WriteVerifyDir(dir string, r *measure.VerifyReport) error {
	if err := outdir.WriteFile(filepath.Join(dir, "verify.json"), func(w io.Writer) error { return Render(w, JSON, r) }); err != nil {
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
	return outdir.WriteFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return WriteVerifyHTMLFigures(w, r, figs) })
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
// WriteFile's) as an *outdir.WriteError, joined by outdir.Join
// (outdir.Split takes them apart).
func FinishVerify(dir string, log *measure.DecisionLog, r *measure.VerifyReport, runErr error, incomplete func(error) *measure.VerifyReport) error {
	if log != nil {
		if err := log.Close(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("write %s: %w", filepath.Join(dir, "decisions.jsonl"), err))
		}
	}
	switch {
	case dir == "":
		return runErr
	case runErr != nil:
		return outdir.Join(runErr, outdir.WriteFile(filepath.Join(dir, "verify.json"), func(w io.Writer) error { return Render(w, JSON, incomplete(runErr)) }))
	}
	return outdir.WriteFailed(WriteVerifyDir(dir, r))
}

// Publish writes a command's results res to out (WriteResults) and to
// stdout (write), says on stderr where they are and how long the command
// took (durationMS), and turns a run that stopped early (runErr) into the
// command's error, naming command: the results are written either way,
// marked incomplete. Errors writing out name it ("write results to DIR:
// ...").
func Publish(ctx context.Context, stdout, stderr io.Writer, command, out string, res any, durationMS int64, runErr error,
	write func(w io.Writer) error) error {
	files, err := WriteResults(ctx, out, res)
	if err != nil {
		return err
	}
	if err := write(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "ratelab: results in %s (%s) — %d ms\n", out, files, durationMS)
	if runErr != nil {
		return fmt.Errorf("%s stopped early (results marked incomplete): %w", command, runErr)
	}
	return nil
}

// WriteResults writes res to out (WriteResultsDir): results.json alone
// once ctx ended, as Ctrl-C ends the command at once (the plots took
// seconds on a loaded machine). It returns what it wrote, for stderr;
// errors name out ("write results to DIR: ...").
func WriteResults(ctx context.Context, out string, res any) (files string, err error) {
	brief := ctx.Err() != nil
	if err := WriteResultsDir(out, res, brief); err != nil {
		return "", fmt.Errorf("write results to %s: %w", out, err)
	}
	if brief {
		return "results.json only: interrupted; ratelab report " + out + " draws the plots", nil
	}
	return "results.json, report.md, report.html, plots", nil
}
