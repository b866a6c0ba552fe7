package reports

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/ratelab/ratelab/measure"
)

// WriteBench renders bench results to w in format, one of Formats:
//
//   - "table" / "markdown": one line per algorithm x path with clients,
//     pipeline, decisions per second (median of ratelab's runs), latency
//     p50/p99/p99.9/max (µs), the server's own µs per EVALSHA and its CPU,
//     the share of decisions allowed, the calls answered with an error
//     (not decisions), and when compared redis-benchmark's
//     decisions per second (median) and the ratio ratelab/redis-benchmark;
//     then notes on how the figures are made.
//   - "json": the whole BenchResults, indented, as results.json holds it.
//   - "csv": a header of BenchRow's scalar JSON names and one record per row.
func WriteBench(w io.Writer, format Format, r *measure.BenchResults) error {
	if r == nil {
		return fmt.Errorf("reports: no bench results to write")
	}
	return writeIn(w, format, func(w io.Writer, markdown bool) error { return writeBenchText(w, r, markdown, format == Wide) }, r, r.Results)
}

// benchDrop is when each bench column is left out to fit TableWidth (see
// column.drop), by header.
var benchDrop = map[string]int{"clients": 3, "pipeline": 4, "p99.9 µs": 9, "max µs": 8, "server µs/call": 5,
	"server CPU": 7, "client CPU": 6, "allowed": 2, "its client CPU": 10}

func BenchCompared(r *measure.BenchResults) bool {
	for _, row := range r.Results {
		if row.RedisBenchmarkPerS > 0 {
			return true
		}
	}
	return false
}

func writeBenchText(w io.Writer, r *measure.BenchResults, markdown, wide bool) error {
	var b strings.Builder
	escape, bullet := noEscape, ""
	if markdown {
		escape, bullet = escapeMarkdown, "- "
	}
	writeIncomplete(&b, r.Complete, r.Error, markdown)
	if len(r.Results) == 0 {
		b.WriteString("no results\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	compared := BenchCompared(r)
	header, rows := benchTable(r, escape)
	align := []tw.Align{tw.AlignLeft, tw.AlignLeft}
	for range len(header) - 2 {
		align = append(align, tw.AlignRight)
	}
	notes := benchNotes(r, compared)
	switch {
	case markdown:
		if err := renderAny(&b, renderer.NewMarkdown(), header, align, rows); err != nil {
			return err
		}
		b.WriteByte('\n')
	case wide:
		if err := renderAny(&b, renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)}), header, align, rows); err != nil {
			return err
		}
	default:
		cols := make([]column, len(header))
		for i, h := range header {
			cols[i] = column{head: fmt.Sprint(h), right: align[i] == tw.AlignRight, drop: benchDrop[fmt.Sprint(h)]}
		}
		t, dropped, err := fitTable(cols, rows, TableWidth)
		if err != nil {
			return err
		}
		b.WriteString(t)
		if n := droppedNote(dropped); n != "" {
			notes = append(notes, n)
		}
	}
	for _, n := range notes {
		if !markdown && !wide {
			n = wrapText(n, TableWidth, 2)
		}
		fmt.Fprintf(&b, "%s%s\n", bullet, escape(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeIn renders a results value in one of Formats: text for "table"
// (markdown false) and "markdown", v as indented JSON, rows (a slice of
// structs) as CSV. An unknown format is a *field.Error naming "format".
func writeIn[T any](w io.Writer, format Format, text func(w io.Writer, markdown bool) error, v any, rows []T) error {
	var err error
	switch format {
	case Table, Wide, Markdown:
		err = text(w, format == Markdown)
	case JSON:
		err = WriteJSON(w, v)
	case CSV:
		err = writeRowsCSV(w, rows)
	default:
		return format.Validate()
	}
	if err != nil {
		return fmt.Errorf("reports: %s output: %w", format, err)
	}
	return nil
}

// benchTable is the bench table's header and rows, cells escaped by escape.
func benchTable(r *measure.BenchResults, escape func(string) string) (header []any, rows [][]string) {
	compared := BenchCompared(r)
	header = []any{"algorithm", "path", "clients", "pipeline", "decisions/s", "p50 µs", "p99 µs", "p99.9 µs", "max µs",
		"server µs/call", "server CPU", "client CPU", "allowed", "errors"}
	if compared {
		header = append(header, "redis-benchmark/s", "its client CPU", "ratio")
	}
	for _, row := range r.Results {
		cells := []string{
			escape(row.Algorithm), escape(row.Path),
			strconv.Itoa(row.Clients), strconv.Itoa(row.Pipeline),
			FormatFixed(row.DecisionsPerS, 0),
			strconv.FormatInt(row.P50US, 10), strconv.FormatInt(row.P99US, 10),
			strconv.FormatInt(row.P999US, 10), strconv.FormatInt(row.MaxUS, 10),
			FormatFixed(row.ServerUSPerCall, 2),
			FormatFixed(row.ServerCPUPct, 0) + "%",
			FormatFixed(row.ClientCPUPct, 0) + "%",
			formatPct(row.Allowed, row.Decisions),
			strconv.FormatInt(row.Errors, 10),
		}
		if compared {
			if row.RedisBenchmarkPerS > 0 {
				cells = append(cells, FormatFixed(row.RedisBenchmarkPerS, 0), FormatFixed(row.RedisBenchmarkClientCPUPct, 0)+"%", FormatFixed(row.VsRedisBenchmark, 2))
			} else {
				cells = append(cells, "", "", "")
			}
		}
		rows = append(rows, cells)
	}
	return header, rows
}

// WriteBenchHTML writes report.html for bench results: the configuration,
// the throughput and latency table with its notes, and the figures.
func WriteBenchHTML(w io.Writer, r *measure.BenchResults, figures []Figure) error {
	if r == nil {
		return fmt.Errorf("reports: no bench results to write")
	}
	c := r.Config
	doc := HTMLDoc{Title: "ratelab bench report", Figures: figures, Notes: benchNotes(r, BenchCompared(r))}
	if !r.Complete {
		doc.Incomplete = incompleteText(r.Error)
	}
	doc.Config = [][2]string{
		{"algorithms", orNone(strings.Join(c.Algorithms, ", "))},
		{"paths", orNone(strings.Join(c.Paths, ", "))},
		{"limit", fmt.Sprintf("%d per %s", c.Limit, FormatWindow(c.WindowMS))},
		{"clients, pipeline", fmt.Sprintf("%d, %d", c.Clients, c.Pipeline)},
		{"Redis", strings.ReplaceAll(redisDesc(r.Redis), "`", "")},
		{"started at", r.StartedAt.UTC().Format(time.RFC3339)},
		{"duration", (time.Duration(r.DurationMS) * time.Millisecond).String()},
	}
	header, rows := benchTable(r, noEscape)
	t := HTMLTable{Title: "Decisions per second and latency"}
	for i, h := range header {
		t.Header = append(t.Header, fmt.Sprint(h))
		t.Right = append(t.Right, i > 1)
	}
	for _, cells := range rows {
		t.Rows = append(t.Rows, HTMLRow{Cells: cells})
	}
	doc.Tables = []HTMLTable{t}
	return WriteHTMLDoc(w, doc)
}

func formatPct(part, whole int64) string {
	if whole == 0 {
		return "n/a"
	}
	return FormatFixed(100*float64(part)/float64(whole), 1) + "%"
}

// benchNotes are the sentences under the bench table.
func benchNotes(r *measure.BenchResults, compared bool) []string {
	c := r.Config
	load := "closed loop (each client sends its next pipeline when the replies are in)"
	if c.RatePerS > 0 {
		load = fmt.Sprintf("paced at %s decisions/s; latencies corrected for coordinated omission", FormatFixed(c.RatePerS, 0))
	}
	notes := []string{
		fmt.Sprintf("limit %d per %s; allow path: %d keys picked at random; deny path: one hot key at its limit; scripts read Redis TIME; %s",
			c.Limit, FormatWindow(c.WindowMS), c.Keys, load),
		"latency: round trip of the decision's pipeline as the client saw it (HdrHistogram); server µs/call: redis-server's CPU (INFO cpu, user+sys) per EVALSHA (INFO commandstats calls); server CPU and client CPU: redis-server's and ratelab's user+sys over the runs' wall time, % of one core",
	}
	if compared {
		notes = append(notes, fmt.Sprintf("ratio = ratelab / redis-benchmark decisions/s, medians of %d alternating runs of each (A B, B A, ...), every run from fresh keys making the same number of decisions, same EVALSHA, clients and pipeline; client GOMAXPROCS %s",
			c.Rounds, procsDesc(c.Procs)))
		for _, row := range r.Results {
			if row.RedisBenchmarkPerS > 0 && row.VsRedisBenchmark < 0.9 {
				notes = append(notes, fmt.Sprintf("%s %s: ratelab reached %.2fx redis-benchmark (below 0.9x)", row.Algorithm, row.Path, row.VsRedisBenchmark))
			}
		}
	}
	return notes
}

func procsDesc(p int) string {
	if p == 0 {
		return "unchanged"
	}
	return strconv.Itoa(p)
}

// BenchPaths lists the paths of r's rows in first-appearance order.
func BenchPaths(r *measure.BenchResults) []string {
	var out []string
	for _, row := range r.Results {
		found := false
		for _, p := range out {
			found = found || p == row.Path
		}
		if !found {
			out = append(out, row.Path)
		}
	}
	return out
}

// WriteBenchReport writes report.md of a bench run to w: its configuration
// and Redis, the throughput and latency table, every run, and a Markdown
// image for each of plots (PNG names relative to the report's directory).
// Errors come from w.
func WriteBenchReport(w io.Writer, r *measure.BenchResults, plots []string) error {
	var b bytes.Buffer
	c := r.Config
	b.WriteString("# ratelab bench report\n\n")
	items := []string{
		"algorithms: " + orNone(codeList(c.Algorithms)),
		"paths: " + orNone(codeList(c.Paths)),
		fmt.Sprintf("limit: %d per %s", c.Limit, FormatWindow(c.WindowMS)),
		fmt.Sprintf("clients: %d, pipeline: %d, allow-path keys: %d", c.Clients, c.Pipeline, c.Keys),
		fmt.Sprintf("first run: %s; rounds: %d; client GOMAXPROCS: %s", FormatWindow(c.DurationMS), c.Rounds, procsDesc(c.Procs)),
	}
	if c.RedisBenchmark != "" {
		items = append(items, "redis-benchmark: "+code(c.RedisBenchmark))
	}
	items = append(items, "key prefix: "+orNone(code(c.Prefix)))
	writeRunHeader(&b, r.Header, items)
	b.WriteString("\n## Throughput and latency\n\n")
	if err := writeBenchText(&b, r, true, false); err != nil {
		return err
	}
	if len(r.Results) > 0 {
		b.WriteString("\n## Runs\n\n")
		var rows [][]string
		for _, row := range r.Results {
			for i, run := range row.Runs {
				rows = append(rows, []string{escapeMarkdown(row.Algorithm), escapeMarkdown(row.Path), strconv.Itoa(i + 1),
					escapeMarkdown(run.Tool), strconv.FormatInt(run.Decisions, 10), FormatFixed(run.Seconds, 2),
					FormatFixed(run.PerS, 0), strconv.FormatInt(run.P50US, 10), strconv.FormatInt(run.P99US, 10),
					FormatFixed(run.ServerUSPerCall, 2), FormatFixed(run.ServerCPUPct, 0) + "%", FormatFixed(run.ClientCPUPct, 0) + "%"})
			}
		}
		header := []any{"algorithm", "path", "run", "tool", "decisions", "seconds", "decisions/s", "p50 µs", "p99 µs", "server µs/call", "server CPU", "client CPU"}
		align := []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignLeft}
		for range 8 {
			align = append(align, tw.AlignRight)
		}
		var tb strings.Builder
		if err := renderAny(&tb, renderer.NewMarkdown(), header, align, rows); err != nil {
			return err
		}
		b.WriteString(tb.String())
	}
	writePlotLinks(&b, plots)
	_, err := w.Write(append(bytes.TrimRight(b.Bytes(), "\n"), '\n'))
	return err
}
