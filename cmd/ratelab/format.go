package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/reports"
)

// formatFlag is a command's --format: how its results go to stdout. Every
// command declares it with add, which checks it before the command runs
// (cobra's PreRunE), and prints with render (reports.Render), so the check
// is made once, here.
type formatFlag struct {
	value   string
	allowed []reports.Format
	wide    bool // --wide: tables with every column (reports.Wide)
}

// add declares --format on c (default table), taking allowed (every
// reports.Format when none).
func (f *formatFlag) add(c *cobra.Command, allowed ...reports.Format) {
	if len(allowed) == 0 {
		allowed = reports.Formats
	}
	f.allowed = allowed
	c.Flags().StringVar(&f.value, "format", string(reports.Table), "what to print on stdout: "+reports.FormatList(allowed))
	c.Flags().BoolVar(&f.wide, "wide", false, "tables with every column, however wide (by default they fit 100 columns)")
	c.PreRunE = func(*cobra.Command, []string) error {
		_, err := f.get()
		return err
	}
}

// get returns --format, or a usage error naming the flag when the command
// does not take it (`--format: unknown format "csv" (want table or json)`).
func (f *formatFlag) get() (reports.Format, error) {
	v, err := reports.ParseFormat(f.value, f.allowed...)
	return v, flagError(nil, err)
}

// render returns the writer of results in --format, for publish.
func (f *formatFlag) render(results any) func(io.Writer) error {
	format := reports.Format(f.value)
	if f.wide && format == reports.Table {
		format = reports.Wide
	}
	return func(w io.Writer) error { return reports.Render(w, format, results) }
}
