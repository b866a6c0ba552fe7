package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/ratelab/ratelab/measure"
)

// WriteCapacity renders capacity results to w in format, one of Formats:
//
//   - "table" / "markdown": one line per algorithm x limit with the keys
//     measured (N), the encoding, entries per key, MEMORY USAGE per key (B),
//     bytes per entry, MU + TTL (MEMORY USAGE plus the measured per-key
//     overhead of a key with a TTL), the used_memory delta per key, their
//     agreement, and the projection for M active keys; then notes: each
//     encoding change between two limits, the trim measurement, how MU + TTL
//     is made, and any warnings.
//   - "json": the whole CapacityResults, indented, as results.json holds it.
//   - "csv": a header of CapacityRow's JSON names and one record per row.
func WriteCapacity(w io.Writer, format Format, r *measure.CapacityResults) error {
	if r == nil {
		return fmt.Errorf("reports: no capacity results to write")
	}
	return writeIn(w, format, func(w io.Writer, markdown bool) error { return writeCapacityText(w, r, markdown, format == Wide) }, r, r.Results)
}

// capacityDrop is when each capacity column is left out to fit TableWidth
// (see column.drop), by index in capacityHeader.
var capacityDrop = []int{0, 0, 3, 0, 4, 0, 6, 5, 0, 7, 0}

func capacityHeader(r *measure.CapacityResults) []any {
	return []any{"algorithm", "limit", "keys (N)", "encoding", "entries", "MU B/key", "B/entry",
		"MU+TTL B/key", "used_memory Δ B/key", "agree", formatCount(r.Config.ActiveKeys) + " keys need"}
}

func capacityRows(r *measure.CapacityResults, escape func(string) string) [][]string {
	out := make([][]string, 0, len(r.Results))
	for _, row := range r.Results {
		out = append(out, []string{
			escape(row.Algorithm),
			strconv.FormatInt(row.Limit, 10),
			strconv.Itoa(row.Keys),
			escape(row.Encoding),
			strconv.FormatInt(row.Entries, 10),
			strconv.FormatInt(row.MemoryBytes, 10),
			FormatFixed(row.BytesPerEntry, 1),
			FormatFixed(row.MemoryWithTTLBytes, 0),
			FormatFixed(row.UsedMemoryDeltaBytes, 0),
			FormatFixed(row.Agreement, 2),
			formatBytes(row.ProjectedBytes),
		})
	}
	return out
}

func writeCapacityText(w io.Writer, r *measure.CapacityResults, markdown, wide bool) error {
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
	align := []tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight,
		tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight}
	notes := capacityNotes(r)
	switch {
	case markdown:
		if err := renderAny(&b, renderer.NewMarkdown(), capacityHeader(r), align, capacityRows(r, escape)); err != nil {
			return err
		}
		b.WriteByte('\n')
	case wide:
		if err := renderAny(&b, renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)}), capacityHeader(r), align, capacityRows(r, escape)); err != nil {
			return err
		}
	default:
		var cols []column
		for i, h := range capacityHeader(r) {
			cols = append(cols, column{head: fmt.Sprint(h), right: align[i] == tw.AlignRight, drop: capacityDrop[i]})
		}
		t, dropped, err := fitTable(cols, capacityRows(r, escape), TableWidth)
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

// capacityNotes are the sentences under the capacity table.
func capacityNotes(r *measure.CapacityResults) []string {
	var notes []string
	// encoding changes between consecutive limits of one algorithm
	for i := 1; i < len(r.Results); i++ {
		a, b := r.Results[i-1], r.Results[i]
		if a.Algorithm == b.Algorithm && a.Encoding != b.Encoding && a.Encoding != "" && b.Encoding != "" {
			notes = append(notes, fmt.Sprintf("%s: %s at limit %d (%d entries, %d B/key), %s at limit %d (%d entries, %d B/key): %.1fx the memory for %d more entries",
				a.Algorithm, a.Encoding, a.Limit, a.Entries, a.MemoryBytes, b.Encoding, b.Limit, b.Entries, b.MemoryBytes,
				ratio(float64(b.MemoryBytes), float64(a.MemoryBytes)), b.Entries-a.Entries))
		}
	}
	if t := r.Trim; t != nil {
		notes = append(notes, fmt.Sprintf("trimmed: %s keys filled to %d entries and trimmed to %d by one decision a window later stay %s (%d B/key); fresh keys of %d entries are %s (%d B/key): %.1fx",
			t.Algorithm, t.FilledEntries, t.Entries, t.Encoding, t.MemoryBytes, t.Entries, t.FreshEncoding, t.FreshMemoryBytes,
			ratio(float64(t.MemoryBytes), float64(t.FreshMemoryBytes))))
	}
	if len(r.Results) > 0 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, row := range r.Results {
			lo, hi = math.Min(lo, row.TTLOverheadBytes), math.Max(hi, row.TTLOverheadBytes)
		}
		span := fmt.Sprintf("%.0f B", lo)
		if math.Round(hi) != math.Round(lo) {
			span = fmt.Sprintf("%.0f-%.0f B", lo, hi)
		}
		notes = append(notes,
			"MU = MEMORY USAGE key SAMPLES 0; MU+TTL adds "+span+" per key: what a key with a TTL costs beyond its MU (expires entry, both dicts' slots, allocator rounding of the key's entry), measured on N calibration keys (at least 1000) with a TTL; agree = MU+TTL / used_memory Δ",
			"what is left is MEMORY USAGE's own: it counts a skiplist member's dictEntry as 24 B (the allocator gives 32) and an embstr value unrounded (agree below 1), and a shared integer object (a counter below 10000) as 16 B (agree above 1)",
			fmt.Sprintf("used_memory Δ: INFO used_memory after minus before filling N keys, less client buffers, / N; the projection is %s x used_memory Δ; window %s, key names %s",
				formatCount(r.Config.ActiveKeys), FormatWindow(r.Config.WindowMS), keyNameSpan(r)))
	}
	if p := projectionNote(r); p != "" {
		notes = append(notes, p)
	}
	if len(r.Results) > 0 {
		notes = append(notes, planNote(r))
	}
	notes = append(notes, clusterNodeNotes(r)...)
	for _, w := range r.Warnings {
		notes = append(notes, "warning: "+w)
	}
	return notes
}

// clusterNodeNotes split each row over the masters of a Redis Cluster:
// keys held and used_memory Δ per master (none for a single server).
func clusterNodeNotes(r *measure.CapacityResults) []string {
	var notes []string
	for _, row := range r.Results {
		if len(row.Nodes) == 0 {
			continue
		}
		if notes == nil {
			var addrs []string
			for _, n := range row.Nodes {
				addrs = append(addrs, n.Addr)
			}
			notes = append(notes, "Redis Cluster, per master ("+strings.Join(addrs, " | ")+"): keys, used_memory Δ, Δ per key")
		}
		var parts []string
		for _, n := range row.Nodes {
			per := 0.0
			if n.Keys > 0 {
				per = float64(n.UsedMemoryDeltaBytes) / float64(n.Keys)
			}
			parts = append(parts, fmt.Sprintf("%d keys %s %.0f B/key", n.Keys, formatBytes(n.UsedMemoryDeltaBytes), per))
		}
		notes = append(notes, fmt.Sprintf("%s at limit %d: %s", row.Algorithm, row.Limit, strings.Join(parts, " | ")))
	}
	return notes
}

// projectionNote says what M keys need at one limit (1000 when measured,
// else the largest), per algorithm: "1M keys at limit 1000 need: ...".
func projectionNote(r *measure.CapacityResults) string {
	limit := int64(0)
	for _, row := range r.Results {
		if row.Limit == 1000 {
			limit = 1000
			break
		}
		limit = max(limit, row.Limit)
	}
	var parts []string
	for _, row := range r.Results {
		if row.Limit == limit && row.ProjectedBytes > 0 {
			parts = append(parts, row.Algorithm+" "+formatBytes(row.ProjectedBytes))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s keys at limit %d need: %s", formatCount(r.Config.ActiveKeys), limit, strings.Join(parts, ", "))
}

// planNote says what state the rows measure and what to plan with, and
// why `ratelab run`'s memory column differs.
func planNote(r *measure.CapacityResults) string {
	two := ""
	for _, row := range r.Results {
		if row.RedisKeys > 1 && !strings.Contains(two, row.Algorithm) {
			two += fmt.Sprintf(", %s %.0f Redis keys", row.Algorithm, row.RedisKeys)
		}
	}
	if two != "" {
		two = " (" + two[2:] + ": a window counter outlives its window by its TTL, so the previous one is live beside the current)"
	}
	return "each key is filled to the state a key held at its limit is in most of its life" + two +
		"; plan with used_memory Δ, plus your key names' length beyond " + keyNameSpan(r) + " per Redis key. " +
		"`ratelab run`'s memory column is a few keys at the end of a scenario, with longer names: where the scenario leaves a key in this state " +
		"it agrees within 5 % once the names are accounted for; a burst may leave fewer entries or blocks (docs/capacity-and-bench.md)"
}

func keyNameSpan(r *measure.CapacityResults) string {
	lo, hi := math.MaxInt, 0
	for _, row := range r.Results {
		lo, hi = min(lo, row.KeyNameBytes), max(hi, row.KeyNameBytes)
	}
	if lo == hi {
		return fmt.Sprintf("%d B", lo)
	}
	return fmt.Sprintf("%d-%d B", lo, hi)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// formatCount writes a count briefly: 1000000 -> "1M", 2500 -> "2.5k", 999 -> "999".
func formatCount(n int64) string {
	for _, u := range []struct {
		v int64
		s string
	}{{1_000_000_000, "G"}, {1_000_000, "M"}, {1_000, "k"}} {
		if n >= u.v {
			return strconv.FormatFloat(float64(n)/float64(u.v), 'f', -1, 64) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// renderAny renders a table with a header, per-column alignment and rows.
func renderAny(w io.Writer, rend tw.Renderer, header []any, align []tw.Align, rows [][]string) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(rend),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
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

// WriteJSON writes v as indented JSON and a newline (the form of every
// results.json).
func WriteJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// writeRowsCSV writes a slice of row structs as CSV: a header of their
// scalar fields' JSON names, one record per row, numbers unscaled.
func writeRowsCSV[T any](w io.Writer, rows []T) error {
	t := reflect.TypeFor[T]()
	var idx []int
	var names []string
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
	cw := csv.NewWriter(w)
	if err := cw.Write(names); err != nil {
		return err
	}
	rec := make([]string, len(idx))
	for _, row := range rows {
		v := reflect.ValueOf(row)
		for j, i := range idx {
			rec[j] = csvValue(v.Field(i))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeRunHeader writes the "## Run" list of report.md: items (the
// command's own configuration), then the header's Redis, start and
// duration.
func writeRunHeader(b *bytes.Buffer, h measure.Header, items []string) {
	b.WriteString("## Run\n\n")
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
	fmt.Fprintf(b, "- Redis: %s\n", redisDesc(h.Redis))
	s := "unknown"
	if !h.StartedAt.IsZero() {
		s = h.StartedAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(b, "- started at: %s\n", s)
	fmt.Fprintf(b, "- duration: %s\n", time.Duration(h.DurationMS)*time.Millisecond)
}

func writePlotLinks(b *bytes.Buffer, plots []string) {
	if len(plots) == 0 {
		return
	}
	b.WriteString("\n## Plots\n\n")
	for _, p := range plots {
		name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		fmt.Fprintf(b, "![%s](%s)\n\n", escapeMarkdown(name), markdownURL(p))
	}
}

func joinInts(ns []int64) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ", ")
}

// WriteCapacityReport writes report.md of a capacity run to w: its
// configuration and Redis, the memory-per-key table, and a Markdown image
// for each of plots (PNG names relative to the report's directory). Errors
// come from w.
func WriteCapacityReport(w io.Writer, r *measure.CapacityResults, plots []string) error {
	var b bytes.Buffer
	b.WriteString("# ratelab capacity report\n\n")
	writeRunHeader(&b, r.Header, []string{
		"algorithms: " + orNone(codeList(r.Config.Algorithms)),
		"limits: " + joinInts(r.Config.Limits),
		fmt.Sprintf("keys (N): %d wanted, scaled down to a budget of %d script calls per algorithm and limit", r.Config.Keys, r.Config.Budget),
		"active keys (M): " + strconv.FormatInt(r.Config.ActiveKeys, 10),
		"window: " + FormatWindow(r.Config.WindowMS),
		"key prefix: " + orNone(code(r.Config.Prefix)),
	})
	b.WriteString("\n## Memory per key\n\n")
	if err := writeCapacityText(&b, r, true, false); err != nil {
		return err
	}
	writePlotLinks(&b, plots)
	_, err := w.Write(append(bytes.TrimRight(b.Bytes(), "\n"), '\n'))
	return err
}
