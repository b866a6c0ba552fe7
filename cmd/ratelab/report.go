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
		Short: "Re-render the tables, report.md and plots of a run, capacity or bench from its results.json",
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
