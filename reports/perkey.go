package reports

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/ratelab/ratelab/measure"
)

// perKeyHeader names the per-key table's columns (traffic replays).
var perKeyHeader = []string{
	"algorithm", "scenario", "keys", "keys over", "worst key", "worst max in W", "worst ratio",
	"starved", "starved keys", "most starved", "peak memory", "end memory",
}

// perKeyRight marks the per-key table's numeric columns.
var perKeyRight = []bool{false, false, true, true, false, true, true, true, true, false, true, true}

// perKeyShown is how many of the most starved keys the tables list.
const perKeyShown = 3

// perKeyColumns explains the per-key table.
const perKeyColumns = `Per key: each client key has its own limit. *keys over* counts the keys whose
accepted cost exceeded the limit within some window; *worst key* has the largest
max in W and *worst ratio* = that / limit; *starved* sums the cost the algorithm
refused that an exact sliding-window log (on the same key's requests) accepted,
over *starved keys* keys, the *most starved* first; *peak memory* is the largest
MEMORY USAGE sum over the algorithm's keys among readings during the replay,
*end memory* the one at the end.
`

// hasPerKey says whether any row has per-key figures.
func hasPerKey(r *measure.Results) bool {
	for _, row := range r.Results {
		if row.PerKey != nil {
			return true
		}
	}
	return false
}

// perKeyRows formats one row per Row with per-key figures.
func perKeyRows(rows []measure.Row, escape func(string) string) [][]string {
	var out [][]string
	for _, row := range rows {
		p := row.PerKey
		if p == nil {
			continue
		}
		var most []string
		for _, k := range p.MostStarved[:min(len(p.MostStarved), perKeyShown)] {
			most = append(most, fmt.Sprintf("%s (%d)", k.Key, k.Starved))
		}
		worst := p.WorstKey
		if worst == "" {
			worst = "-"
		}
		out = append(out, []string{
			escape(row.Algorithm), escape(row.Scenario),
			strconv.FormatInt(p.Keys, 10), strconv.FormatInt(p.KeysOver, 10),
			escape(worst), strconv.FormatInt(p.WorstMaxInWindow, 10), FormatFixed(p.WorstRatio, 2),
			strconv.FormatInt(p.Starved, 10), strconv.FormatInt(p.StarvedKeys, 10),
			escape(orDash(strings.Join(most, ", "))),
			formatBytes(p.PeakMemoryBytes), formatBytes(row.MemoryBytes),
		})
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// renderPerKey renders the per-key table with rend.
func renderPerKey(b *strings.Builder, rend tw.Renderer, rows [][]string) error {
	align := make([]tw.Align, len(perKeyRight))
	for i, r := range perKeyRight {
		align[i] = tw.AlignLeft
		if r {
			align[i] = tw.AlignRight
		}
	}
	t := tablewriter.NewTable(b,
		tablewriter.WithRenderer(rend),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	header := make([]any, len(perKeyHeader))
	for i, h := range perKeyHeader {
		header[i] = h
	}
	t.Header(header...)
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("per-key table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("per-key table: %w", err)
	}
	return nil
}

// writePerKeyText appends, for a replay, the per-key table and the traffic
// lines to b: ASCII (markdown false) or Markdown. Nothing for other runs.
func writePerKeyText(b *strings.Builder, r *measure.Results, markdown bool) error {
	if !hasPerKey(r) {
		return nil
	}
	if markdown {
		b.WriteString("\n**Per key**\n\n")
		if err := renderPerKey(b, renderer.NewMarkdown(), perKeyRows(r.Results, escapeMarkdown)); err != nil {
			return err
		}
		b.WriteByte('\n')
		for _, l := range trafficLines(r) {
			fmt.Fprintf(b, "- %s\n", escapeMarkdown(l))
		}
		return nil
	}
	b.WriteString("\nper key:\n")
	if err := renderPerKey(b, renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)}), perKeyRows(r.Results, noEscape)); err != nil {
		return err
	}
	for _, l := range trafficLines(r) {
		b.WriteString(l + "\n")
	}
	return nil
}

// trafficLines describe a replay's traffic and speed, and its first
// malformed lines.
func trafficLines(r *measure.Results) []string {
	t := r.Traffic
	if t == nil {
		return nil
	}
	format := t.Format
	if t.Gzip {
		format += ", gzip"
	}
	span := (time.Duration(t.SpanMS*1000) * time.Microsecond).Round(time.Second)
	lines := []string{fmt.Sprintf("traffic: %s (%s): %d requests from %d keys over %s from %s; %d lines, %d malformed (skipped)",
		t.Source, format, t.Records, t.Keys, span, t.Anchor, t.Lines, t.Malformed)}
	for _, e := range t.Examples {
		lines = append(lines, fmt.Sprintf("malformed: line %d: %s", e.Line, e.Reason))
	}
	speed := fmt.Sprintf("replay: %d decisions, %.0f decisions/s, pipeline %d", t.Decisions, t.DecisionsPerSec, t.Pipeline)
	if t.PeakRSSBytes > 0 {
		speed += ", peak RSS " + formatBytes(t.PeakRSSBytes)
	}
	lines = append(lines, speed)
	if f := t.CeilingFraction(); f > 0 {
		core := "one busy core"
		if t.RedisCores > 1 {
			core = fmt.Sprintf("a busy core on each of %d nodes", t.RedisCores)
		}
		lines = append(lines, fmt.Sprintf("Redis ceiling: Redis used %.2f s of CPU in the replay's %.2f s: %.2f of its ceiling (%s)", t.RedisCPUS, t.ReplayS, f, core))
	}
	return lines
}

// perKeyHTML is the per-key table of report.html, nil for other runs.
func perKeyHTML(r *measure.Results) *HTMLTable {
	if !hasPerKey(r) {
		return nil
	}
	t := &HTMLTable{Title: "Per key", Header: perKeyHeader, Right: perKeyRight,
		Key: strings.ReplaceAll(strings.ReplaceAll(perKeyColumns, "*", ""), "\n", " ")}
	for _, cells := range perKeyRows(r.Results, noEscape) {
		t.Rows = append(t.Rows, HTMLRow{Cells: cells})
	}
	for i, row := range rowsWithPerKey(r) {
		t.Rows[i].Over = row.PerKey.KeysOver > 0
	}
	return t
}

func rowsWithPerKey(r *measure.Results) []measure.Row {
	var out []measure.Row
	for _, row := range r.Results {
		if row.PerKey != nil {
			out = append(out, row)
		}
	}
	return out
}

// perKeyDrop is when each per-key column is left out to fit TableWidth
// (see column.drop), by index in perKeyHeader.
var perKeyDrop = []int{0, 9, 0, 0, 0, 5, 0, 0, 6, 4, 7, 8}

// writePerKeyFitted is writePerKeyText for the table that fits
// TableWidth (writeTable): the per-key table fitted, its lines wrapped.
func writePerKeyFitted(b *strings.Builder, r *measure.Results) error {
	if !hasPerKey(r) {
		return nil
	}
	cols := make([]column, len(perKeyHeader))
	for i, h := range perKeyHeader {
		cols[i] = column{head: h, right: perKeyRight[i], drop: perKeyDrop[i]}
	}
	b.WriteString("\nper key:\n")
	t, dropped, err := fitTable(cols, perKeyRows(r.Results, noEscape), TableWidth)
	if err != nil {
		return fmt.Errorf("per-key table: %w", err)
	}
	b.WriteString(t)
	lines := trafficLines(r)
	if n := droppedNote(dropped); n != "" {
		lines = append(lines, n)
	}
	for _, l := range lines {
		b.WriteString(wrapText(l, TableWidth, 2) + "\n")
	}
	return nil
}
