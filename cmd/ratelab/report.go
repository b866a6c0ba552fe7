package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/publish"
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
			err := publish.Rerender(stdout, args[0], format.Format)
			if name, _ := field.Name(err); name == "format" {
				return flagError(c.Flags(), err)
			} else if err != nil {
				return usageError{err}
			}
			return nil
		},
	}
	format.add(c)
	return c
}
