package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/reports"
)

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
		return outdir.Join(runErr, outdir.WriteFile(filepath.Join(dir, "verify.json"), func(w io.Writer) error { return reports.Render(w, reports.JSON, incomplete(runErr)) }))
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
