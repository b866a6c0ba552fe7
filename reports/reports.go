// Package reports renders a *measure.Results: tables (ASCII and Markdown),
// JSON and CSV to an io.Writer, plots (PNG and SVG) to files, and a run
// directory with results.json, plots and report.md. Reports never talk to
// Redis; everything they show comes from the Results value.
//
// Data stays in base units (cost units, bytes, µs, ms); scaling such as
// "5.1 KiB" happens only in the text formats meant for people (table,
// markdown, report.md).
package reports

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// Write renders r to w in format, one of Formats:
//
//   - "table": an ASCII table, one line per algorithm x scenario row, then
//     one verdict line per row whose ratio is above 1 (the limit was
//     exceeded in some window). An incomplete run starts with
//     "INCOMPLETE: <error>".
//   - "markdown": the same table and verdicts as Markdown.
//   - "json": the whole Results, indented by two spaces, as results.json holds it.
//   - "csv": a header of Row's JSON field names (all but the timeline) and
//     one record per row, numbers in base units and unscaled.
//
// An unknown format returns a *field.Error naming "format"; other errors
// come from w or from encoding (JSON cannot hold NaN or Inf).
func Write(w io.Writer, format Format, r *measure.Results) error {
	if r == nil {
		return fmt.Errorf("reports: no results to write")
	}
	var write func(io.Writer, *measure.Results) error
	switch format {
	case Table:
		write = func(w io.Writer, r *measure.Results) error { return writeTable(w, r, TableWidth) }
	case Wide:
		write = writeTableWide
	case Markdown:
		write = writeMarkdown
	case JSON:
		write = writeJSON
	case CSV:
		write = writeCSV
	default:
		return format.Validate()
	}
	if err := write(w, r); err != nil {
		return fmt.Errorf("reports: %s output: %w", format, err)
	}
	return nil
}

// tableHeader names the table's columns of rows; units are in the header
// (countUnit for the sums of cost, B, µs), cells hold plain numbers.
func tableHeader(rows []measure.Row) []any {
	u := " " + countUnit(rows)
	return []any{
		"algorithm", "scenario", "limit", "offered" + u, "accepted" + u, "max in W" + u,
		"ratio", "ideal" + u, "fidelity", "memory B", "p50 µs", "p99 µs", "errors",
	}
}

// countUnit is the unit of rows' sums of cost (offered, accepted, max in
// W, ideal): "req" when every request of every row cost 1, else "units"
// (cost units).
func countUnit(rows []measure.Row) string {
	for _, r := range rows {
		if r.Offered != r.Requests {
			return "units"
		}
	}
	return "req"
}

// tableAlign left-aligns the text columns and right-aligns the numbers.
var tableAlign = []tw.Align{
	tw.AlignLeft, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight,
	tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight,
}

// tableRows formats one table row per Row; escape is applied to free text
// (the limit description), so Markdown can protect its "|".
func tableRows(rows []measure.Row, escape func(string) string) [][]string {
	out := make([][]string, 0, len(rows))
	for _, row := range rows {
		out = append(out, []string{
			escape(row.Algorithm),
			escape(row.Scenario),
			escape(limitDesc(row)),
			strconv.FormatInt(row.Offered, 10),
			strconv.FormatInt(row.Accepted, 10),
			strconv.FormatInt(row.MaxInWindow, 10),
			FormatFixed(row.Ratio, 2),
			strconv.FormatInt(row.Ideal, 10),
			FormatFixed(row.Fidelity, 2),
			bytesInB(row.MemoryBytes),
			strconv.FormatInt(row.P50US, 10),
			strconv.FormatInt(row.P99US, 10),
			strconv.FormatInt(row.Errors, 10),
		})
	}
	return out
}

// renderTable renders rows with the given tablewriter renderer.
func renderTable(w io.Writer, rend tw.Renderer, header []any, rows [][]string) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(rend),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: tableAlign}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(header...)
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	return nil
}

// WriteTableFitted writes r as the "table" format does, with every line of
// the results table, its notes and verdicts at most width runes (columns
// left out to fit, as the note under the table says; at least 40). The
// per-key table, when r has one, still fits TableWidth. Errors come from w.
// A terminal narrower than TableWidth takes it (ratelab demo).
func WriteTableFitted(w io.Writer, r *measure.Results, width int) error {
	if r == nil {
		return fmt.Errorf("reports: no results to write")
	}
	return writeTable(w, r, max(width, 40))
}

// writeTable writes the table that fits width: one block per scenario, its
// limit on a line above its table, the columns a person needs first
// (algorithm, accepted, max in W, ratio, fidelity), the rest while they fit
// (errors only when a call failed; offered, which the line above the block
// gives, before ideal); then the verdicts and the per-key
// figures.
func writeTable(w io.Writer, r *measure.Results, width int) error {
	var b strings.Builder
	writeIncomplete(&b, r.Complete, r.Error, false)
	if len(r.Results) == 0 {
		b.WriteString("no results\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	errs := false
	for _, row := range r.Results {
		errs = errs || row.Errors > 0
	}
	var dropped []string
	for bi, sc := range scenarioBlocks(r.Results) {
		first := sc[0]
		u := countUnit(sc)
		cols := []column{{"algorithm", false, 0, ""}, {"offered", true, 8, u}, {"accepted", true, 0, u}, {"max in W", true, 0, u},
			{"ratio", true, 0, ""}, {"ideal", true, 7, u}, {"fidelity", true, 0, ""}, {"memory", true, 6, "B"}, {"p50", true, 9, "µs"},
			{"p99", true, 5, "µs"}}
		if errs {
			cols = append(cols, column{"errors", true, 0, ""})
		}
		if bi > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s\n", wrapText(fmt.Sprintf("%s: limit %d per %s, %d requests offered (%d cost units), %s clock",
			first.Scenario, first.Limit, FormatWindow(first.WindowMS), first.Requests, first.Offered, first.Clock), width, 2))
		var rows [][]string
		for _, row := range sc {
			cells := []string{row.Algorithm, strconv.FormatInt(row.Offered, 10), strconv.FormatInt(row.Accepted, 10),
				strconv.FormatInt(row.MaxInWindow, 10), FormatFixed(row.Ratio, 2), strconv.FormatInt(row.Ideal, 10),
				FormatFixed(row.Fidelity, 2), bytesInB(row.MemoryBytes), strconv.FormatInt(row.P50US, 10),
				strconv.FormatInt(row.P99US, 10)}
			if errs {
				cells = append(cells, strconv.FormatInt(row.Errors, 10))
			}
			rows = append(rows, cells)
		}
		t, d, err := fitTable(cols, rows, width)
		if err != nil {
			return err
		}
		b.WriteString(t)
		for _, h := range d {
			if !slices.Contains(dropped, h) {
				dropped = append(dropped, h)
			}
		}
	}
	if n := droppedNote(append(dropped, "each algorithm's own limit description")); n != "" {
		b.WriteString(wrapText(n, width, 2) + "\n")
	}
	for _, v := range verdicts(r) {
		b.WriteString(wrapText(v, width, 2))
		b.WriteByte('\n')
	}
	if err := writePerKeyFitted(&b, r); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// scenarioBlocks groups rows by scenario, in first-appearance order.
func scenarioBlocks(rows []measure.Row) [][]measure.Row {
	var out [][]measure.Row
	idx := map[string]int{}
	for _, row := range rows {
		i, ok := idx[row.Scenario]
		if !ok {
			i = len(out)
			idx[row.Scenario] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], row)
	}
	return out
}

// writeTableWide writes every column of every row in one table (Wide).
func writeTableWide(w io.Writer, r *measure.Results) error {
	var b strings.Builder
	writeIncomplete(&b, r.Complete, r.Error, false)
	if len(r.Results) == 0 {
		b.WriteString("no results\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	rend := renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
	if err := renderTable(&b, rend, tableHeader(r.Results), tableRows(r.Results, noEscape)); err != nil {
		return err
	}
	for _, v := range verdicts(r) {
		b.WriteString(v)
		b.WriteByte('\n')
	}
	if err := writePerKeyText(&b, r, false); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdown writes the optional INCOMPLETE line, the Markdown table and
// the verdicts as a bullet list, separated by blank lines.
func writeMarkdown(w io.Writer, r *measure.Results) error {
	var b strings.Builder
	writeIncomplete(&b, r.Complete, r.Error, true)
	if len(r.Results) == 0 {
		b.WriteString("No results.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	if err := renderTable(&b, renderer.NewMarkdown(), tableHeader(r.Results), tableRows(r.Results, escapeMarkdown)); err != nil {
		return err
	}
	if vs := verdicts(r); len(vs) > 0 {
		b.WriteByte('\n')
		for _, v := range vs {
			fmt.Fprintf(&b, "- %s\n", escapeMarkdown(v))
		}
	}
	if err := writePerKeyText(&b, r, true); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, r *measure.Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	_, err = w.Write(data)
	return err
}

// csvFields returns the indexes and JSON names of Row's scalar fields, in
// declaration order (the timeline and any other slice or struct is left out).
func csvFields() (idx []int, names []string) {
	t := reflect.TypeFor[measure.Row]()
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct, reflect.Pointer, reflect.Interface:
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		idx = append(idx, i)
		names = append(names, name)
	}
	return idx, names
}

func writeCSV(w io.Writer, r *measure.Results) error {
	idx, names := csvFields()
	cw := csv.NewWriter(w)
	if err := cw.Write(names); err != nil {
		return err
	}
	rec := make([]string, len(idx))
	for _, row := range r.Results {
		v := reflect.ValueOf(row)
		for j, i := range idx {
			rec[j] = csvValue(v.Field(i))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return nil
}

// csvValue formats a scalar field unscaled: integers in base 10, floats in
// the shortest form that round-trips ("2", "0.95", "NaN").
func csvValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return fmt.Sprint(v.Interface())
}

// verdicts returns one sentence per row whose ratio is above 1, in row
// order: which algorithm let how much through one window of which scenario.
func verdicts(r *measure.Results) []string {
	var out []string
	for _, row := range r.Results {
		if !(row.Ratio > 1) || math.IsInf(row.Ratio, 0) {
			continue
		}
		out = append(out, fmt.Sprintf("%s on %s: %d accepted within one %s window — %sx the limit of %d",
			row.Algorithm, row.Scenario, row.MaxInWindow, FormatWindow(row.WindowMS),
			FormatFixed(row.Ratio, 2), row.Limit))
	}
	out = append(out, r.Notes...)
	for _, row := range r.Results {
		if row.Errors == 0 {
			continue
		}
		policy := fmt.Sprintf("fail-closed denied %d units", row.FailedClosed)
		if row.FailedOpen > 0 {
			policy = fmt.Sprintf("fail-open let %d units through unmetered", row.FailedOpen)
		}
		out = append(out, fmt.Sprintf("%s on %s: %d calls failed; %s", row.Algorithm, row.Scenario, row.Errors, policy))
	}
	return out
}

// incompleteText is why a run stopped early: its recorded error
// (errText), or a sentence saying that none was recorded.
func incompleteText(errText string) string {
	if errText != "" {
		return errText
	}
	return "the run stopped early (no error recorded)"
}

// writeIncomplete writes the INCOMPLETE line of a run that stopped early
// (nothing when complete): plain, or bold in Markdown and followed by a
// blank line.
func writeIncomplete(b io.Writer, complete bool, errText string, markdown bool) {
	switch {
	case complete:
	case markdown:
		fmt.Fprintf(b, "**INCOMPLETE:** %s\n\n", escapeMarkdown(incompleteText(errText)))
	default:
		fmt.Fprintf(b, "INCOMPLETE: %s\n", incompleteText(errText))
	}
}

// limitDesc is the limiter's own description, or "L per W" when it has none.
func limitDesc(row measure.Row) string {
	if row.LimitDesc != "" {
		return row.LimitDesc
	}
	return fmt.Sprintf("%d per %s", row.Limit, FormatWindow(row.WindowMS))
}

// FormatFixed formats f with prec decimals; NaN is "n/a" and ±Inf "inf"/"-inf".
func FormatFixed(f float64, prec int) string {
	switch {
	case math.IsNaN(f):
		return "n/a"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// formatBytes scales a byte count for display, base 1024: "72 B",
// "5.1 KiB", "1.3 MiB".
// bytesInB is n bytes for a column whose header says "B": under 1024 the
// number ("240"), else with a binary prefix as benchstat writes it
// ("2.1 Ki", "1.2 Mi"): a skiplist's random levels move its last digits.
func bytesInB(n int64) string {
	return strings.TrimSpace(strings.TrimSuffix(formatBytes(n), "B"))
}

func formatBytes(n int64) string {
	if n > -1024 && n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	i := 0
	for i < len(units)-1 && math.Abs(math.Round(v*10)/10) >= 1024 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// FormatWindow formats a window in ms as limit.FormatWindow does: "10s",
// "1m", "1h", "1m30s", "250ms", "1d".
func FormatWindow(ms int64) string {
	return limit.FormatWindow(time.Duration(ms) * time.Millisecond)
}

func noEscape(s string) string { return s }

// escapeMarkdown protects the characters that would break a Markdown table
// cell or start emphasis.
var markdownEscaper = strings.NewReplacer(`|`, `\|`, `*`, `\*`, `_`, `\_`, "`", "\\`")

func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }
