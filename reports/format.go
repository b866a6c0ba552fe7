package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
)

// Format is how a result is rendered to a writer (the --format flag).
type Format string

// The formats. Every result renders as Table and JSON; run, bench and
// capacity results also as Markdown and CSV (FormatsOf).
const (
	// Table is an ASCII table for people, with notes and verdicts.
	Table Format = "table"
	// Markdown is the same as Markdown tables.
	Markdown Format = "markdown"
	// JSON is the whole result, indented by two spaces, as the results
	// file holds it.
	JSON Format = "json"
	// CSV is a header of the rows' JSON names and one record per row,
	// numbers in base units and unscaled.
	CSV Format = "csv"
)

// Formats lists every Format, in the order help text shows them.
var Formats = []Format{Table, Markdown, JSON, CSV}

// VerifyFormats are the formats of a verification report (and of the
// demo's stdout): Table and JSON.
var VerifyFormats = []Format{Table, JSON}

// ParseFormat returns s as a Format when it is one of allowed (every
// Format when allowed is empty); otherwise a *field.Error naming "format"
// that lists the allowed ones.
func ParseFormat(s string, allowed ...Format) (Format, error) {
	f := Format(s)
	return f, f.Validate(allowed...)
}

// Validate returns nil when f is one of allowed (every Format when allowed
// is empty), else a *field.Error naming "format", e.g. `format: unknown
// format "xml" (want table, markdown, json or csv)`.
func (f Format) Validate(allowed ...Format) error {
	if len(allowed) == 0 {
		allowed = Formats
	}
	if slices.Contains(allowed, f) || (f == Wide && slices.Contains(allowed, Table)) {
		return nil
	}
	return field.Errorf("format", "unknown format %q (want %s)", string(f), FormatList(allowed))
}

// FormatList writes formats for people: "table or json", "table,
// markdown, json or csv".
func FormatList(formats []Format) string {
	s := make([]string, len(formats))
	for i, f := range formats {
		s[i] = string(f)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// FormatsOf is the formats Render takes for results: VerifyFormats for a
// *measure.VerifyReport, Formats for the others.
func FormatsOf(results any) []Format {
	if _, ok := results.(*measure.VerifyReport); ok {
		return VerifyFormats
	}
	return Formats
}

// Render writes results — a *measure.Results (run, demo),
// *measure.BenchResults, *measure.CapacityResults or
// *measure.VerifyReport — to w in format f, through that type's writer
// (Write, WriteBench, WriteCapacity, WriteVerify). A format the type does
// not take (FormatsOf) is a *field.Error naming "format"; a nil or
// unknown results value is an error; other errors come from w or the
// encoding.
func Render(w io.Writer, f Format, results any) error {
	if err := f.Validate(FormatsOf(results)...); err != nil {
		return err
	}
	switch r := results.(type) {
	case *measure.Results:
		return Write(w, f, r)
	case *measure.BenchResults:
		return WriteBench(w, f, r)
	case *measure.CapacityResults:
		return WriteCapacity(w, f, r)
	case *measure.VerifyReport:
		return WriteVerify(w, f, r)
	}
	return fmt.Errorf("reports: cannot render %T", results)
}

// Choice is a command's choice of how its results go to stdout. The zero
// Choice is Table of every Format's results, at most 100 columns wide.
type Choice struct {
	// Format is the format chosen; "" is not one (Check refuses it).
	Format Format
	// Allowed are the formats the command takes; empty means every Format.
	Allowed []Format
	// Wide shows Table with every column, however wide (Wide).
	Wide bool
}

// Check returns nil when c.Format is one of c.Allowed, else a *field.Error
// naming "format" that lists them (Validate).
func (c Choice) Check() error { return c.Format.Validate(c.Allowed...) }

// Renderer returns the writer of results in c.Format (Render; Table as
// Wide when c.Wide), as Publish takes it. Its errors are Render's. Safe
// for concurrent use.
func (c Choice) Renderer(results any) func(io.Writer) error {
	f := c.Format
	if c.Wide && f == Table {
		f = Wide
	}
	return func(w io.Writer) error { return Render(w, f, results) }
}
