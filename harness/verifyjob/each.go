package verifyjob

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish/ci"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/targets"
)

// Each verifies the targets specs in turn, with run, and tallies each in
// suite as it ends. run gets the target and its results directory: out,
// or with several targets out's subdirectory named by the target's name
// made a safe file name, unique among the targets (ci.DirNames; "" stays
// ""); it returns the target's report, nil when it
// stopped before one (its error then is the report: ci.ErrorReport), and
// its error. failed says whether an error is a failed verification (exit
// 1) rather than one that could not be made. With several targets, each
// is announced on progress first ("ratelab: target NAME"). Each stops
// before the next target once ctx is done, and returns the targets'
// errors in order (nil ones left out).
func Each(ctx context.Context, specs []targets.Spec, out string, progress io.Writer, suite *ci.Suite,
	failed func(error) bool, run func(s targets.Spec, out string) (*measure.VerifyReport, error)) []error {
	several := len(specs) > 1
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	dirs := ci.DirNames(names)
	var errs []error
	for i, s := range specs {
		if ctx.Err() != nil {
			break
		}
		dir := out
		if several && out != "" {
			dir = filepath.Join(out, dirs[i])
		}
		if several {
			fmt.Fprintf(progress, "ratelab: target %s\n", s.Label())
		}
		rep, err := run(s, dir)
		if rep == nil { // stopped before a report: the error is the testcase
			rep = ci.ErrorReport(s.Label(), s.Limits, err)
		}
		suite.Add(reports.Verified{Report: rep, Name: s.Name, File: s.SourceFile()}, s.Label(), failed(err), err)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
