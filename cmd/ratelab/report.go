package main

import (
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

func newReportCmd(stdout, _ io.Writer) *cobra.Command {
	var format formatFlag
	c := &cobra.Command{
		Use:   "report DIR",
		Short: "Re-render the tables, report.md and plots of a run, capacity or bench from its results.json (a verify's from its verify.json)",
		Example: `  ratelab report results/20261122T030000-ab12
  ratelab report results/20261122T030000-ab12 --format markdown`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := format.get(); err != nil {
				return err
			}
			dir := args[0]
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usagef("report: %s is not a directory", dir)
			}
			if isVerifyDir(dir) {
				return rerenderVerify(stdout, dir, &format)
			}
			// capacity and bench results have rows of their own
			switch command, err := measure.ResultsCommand(filepath.Join(dir, "results.json")); {
			case err != nil:
				return usageError{err}
			case command == "capacity":
				return rerender(stdout, dir, &format, measure.ReadCapacity, reports.WriteCapacityDir)
			case command == "bench":
				return rerender(stdout, dir, &format, measure.ReadBench, reports.WriteBenchDir)
			}
			return rerender(stdout, dir, &format, measure.ReadResults, reports.WriteDir)
		},
	}
	format.add(c)
	return c
}

// isVerifyDir reports whether dir is a `verify --out` directory: a
// verify.json and no results.json.
func isVerifyDir(dir string) bool {
	_, errResults := os.Stat(filepath.Join(dir, "results.json"))
	_, errVerify := os.Stat(filepath.Join(dir, "verify.json"))
	return os.IsNotExist(errResults) && errVerify == nil
}

// rerenderVerify reads dir's verify.json (of this ratelab or an older one),
// writes its report.html again and prints it in --format (table or json).
func rerenderVerify(stdout io.Writer, dir string, format *formatFlag) error {
	f, _ := format.get() // checked by the caller
	if err := f.Validate(reports.VerifyFormats...); err != nil {
		return flagError(nil, err)
	}
	rep, err := measure.ReadVerify(filepath.Join(dir, "verify.json"))
	if err != nil {
		return usageError{err}
	}
	if err := reports.WriteFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return reports.WriteVerifyHTML(w, rep) }); err != nil {
		return flagError(nil, err)
	}
	return format.render(rep)(stdout)
}
