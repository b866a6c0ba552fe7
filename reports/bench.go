package reports

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/ratelab/ratelab/measure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
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
func WriteBench(w io.Writer, format string, r *measure.BenchResults) error {
	if r == nil {
		return fmt.Errorf("reports: no bench results to write")
	}
	return writeIn(w, format, func(w io.Writer, markdown bool) error { return writeBenchText(w, r, markdown) }, r, r.Results)
}

func benchCompared(r *measure.BenchResults) bool {
	for _, row := range r.Results {
		if row.RedisBenchmarkPerS > 0 {
			return true
		}
	}
	return false
}

func writeBenchText(w io.Writer, r *measure.BenchResults, markdown bool) error {
	var b strings.Builder
	escape, bullet := noEscape, ""
	if markdown {
		escape, bullet = escapeMarkdown, "- "
	}
	if !r.Complete {
		reason := r.Error
		if reason == "" {
			reason = "the run stopped early (no error recorded)"
		}
		if markdown {
			fmt.Fprintf(&b, "**INCOMPLETE:** %s\n\n", escapeMarkdown(reason))
		} else {
			fmt.Fprintf(&b, "INCOMPLETE: %s\n", reason)
		}
	}
	if len(r.Results) == 0 {
		b.WriteString("no results\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	compared := benchCompared(r)
	header, rows := benchTable(r, escape)
	align := []tw.Align{tw.AlignLeft, tw.AlignLeft}
	for range len(header) - 2 {
		align = append(align, tw.AlignRight)
	}
	var rend tw.Renderer = renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
	if markdown {
		rend = renderer.NewMarkdown()
	}
	if err := renderAny(&b, rend, header, align, rows); err != nil {
		return err
	}
	if markdown {
		b.WriteByte('\n')
	}
	for _, n := range benchNotes(r, compared) {
		fmt.Fprintf(&b, "%s%s\n", bullet, escape(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeIn renders a results value in one of Formats: text for "table"
// (markdown false) and "markdown", v as indented JSON, rows (a slice of
// structs) as CSV. An unknown format names --format.
func writeIn[T any](w io.Writer, format string, text func(w io.Writer, markdown bool) error, v any, rows []T) error {
	var err error
	switch format {
	case "table", "markdown":
		err = text(w, format == "markdown")
	case "json":
		err = writeIndentedJSON(w, v)
	case "csv":
		err = writeRowsCSV(w, rows)
	default:
		return fmt.Errorf("--format: unknown format %q (want table, markdown, json or csv)", format)
	}
	if err != nil {
		return fmt.Errorf("reports: %s output: %w", format, err)
	}
	return nil
}

// benchTable is the bench table's header and rows, cells escaped by escape.
func benchTable(r *measure.BenchResults, escape func(string) string) (header []any, rows [][]string) {
	compared := benchCompared(r)
	header = []any{"algorithm", "path", "clients", "pipeline", "decisions/s", "p50 µs", "p99 µs", "p99.9 µs", "max µs",
		"server µs/call", "server CPU", "client CPU", "allowed", "errors"}
	if compared {
		header = append(header, "redis-benchmark/s", "its client CPU", "ratio")
	}
	for _, row := range r.Results {
		cells := []string{
			escape(row.Algorithm), escape(row.Path),
			strconv.Itoa(row.Clients), strconv.Itoa(row.Pipeline),
			formatFixed(row.DecisionsPerS, 0),
			strconv.FormatInt(row.P50US, 10), strconv.FormatInt(row.P99US, 10),
			strconv.FormatInt(row.P999US, 10), strconv.FormatInt(row.MaxUS, 10),
			formatFixed(row.ServerUSPerCall, 2),
			formatFixed(row.ServerCPUPct, 0) + "%",
			formatFixed(row.ClientCPUPct, 0) + "%",
			formatPct(row.Allowed, row.Decisions),
			strconv.FormatInt(row.Errors, 10),
		}
		if compared {
			if row.RedisBenchmarkPerS > 0 {
				cells = append(cells, formatFixed(row.RedisBenchmarkPerS, 0), formatFixed(row.RedisBenchmarkClientCPUPct, 0)+"%", formatFixed(row.Ratio, 2))
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
	doc := HTMLDoc{Title: "ratelab bench report", Figures: figures, Notes: benchNotes(r, benchCompared(r))}
	if !r.Complete {
		doc.Incomplete = r.Error
		if doc.Incomplete == "" {
			doc.Incomplete = "the run stopped early (no error recorded)"
		}
	}
	doc.Config = [][2]string{
		{"algorithms", orNone(strings.Join(c.Algorithms, ", "))},
		{"paths", orNone(strings.Join(c.Paths, ", "))},
		{"limit", fmt.Sprintf("%d per %s", c.Limit, formatWindow(c.WindowMS))},
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
	return formatFixed(100*float64(part)/float64(whole), 1) + "%"
}

// benchNotes are the sentences under the bench table.
func benchNotes(r *measure.BenchResults, compared bool) []string {
	c := r.Config
	load := "closed loop (each client sends its next pipeline when the replies are in)"
	if c.RatePerS > 0 {
		load = fmt.Sprintf("paced at %s decisions/s; latencies corrected for coordinated omission", formatFixed(c.RatePerS, 0))
	}
	notes := []string{
		fmt.Sprintf("limit %d per %s; allow path: %d keys picked at random; deny path: one hot key at its limit; scripts read Redis TIME; %s",
			c.Limit, formatWindow(c.WindowMS), c.Keys, load),
		"latency: round trip of the decision's pipeline as the client saw it (HdrHistogram); server µs/call: INFO commandstats usec/calls of EVALSHA; server CPU and client CPU: redis-server's and ratelab's user+sys over the runs' wall time, % of one core",
	}
	if compared {
		notes = append(notes, fmt.Sprintf("ratio = ratelab / redis-benchmark decisions/s, medians of %d alternating runs of each (A B, B A, ...), every run from fresh keys making the same number of decisions, same EVALSHA, clients and pipeline; client GOMAXPROCS %s",
			c.Rounds, procsDesc(c.Procs)))
		for _, row := range r.Results {
			if row.RedisBenchmarkPerS > 0 && row.Ratio < 0.9 {
				notes = append(notes, fmt.Sprintf("%s %s: ratelab reached %.2fx redis-benchmark (below 0.9x)", row.Algorithm, row.Path, row.Ratio))
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

// WriteBenchDir writes a bench run directory: results.json, one latency
// CDF plot per path (latency-<path>.png and .svg), throughput.png and .svg,
// and report.md with the table, every run, and the plots.
func WriteBenchDir(dir string, r *measure.BenchResults) error {
	if r == nil {
		return fmt.Errorf("reports: no bench results to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	if err := writeFile(file("results.json"), func(w io.Writer) error { return writeIndentedJSON(w, r) }); err != nil {
		return err
	}
	var plots []string
	for _, path := range benchPaths(r) {
		if !pathHasCDF(r, path) {
			continue
		}
		base := "latency-" + fileSafe(path)
		for _, ext := range []string{".png", ".svg"} {
			if err := PlotLatencyCDF(r, path, file(base+ext)); err != nil {
				return err
			}
		}
		plots = append(plots, base+".png")
	}
	if len(r.Results) > 0 {
		for _, ext := range []string{".png", ".svg"} {
			if err := PlotThroughput(r, file("throughput"+ext)); err != nil {
				return err
			}
		}
		plots = append(plots, "throughput.png")
	}
	figs, err := readFigures(dir, plots)
	if err != nil {
		return err
	}
	if err := writeFile(file("report.html"), func(w io.Writer) error { return WriteBenchHTML(w, r, figs) }); err != nil {
		return err
	}
	return writeFile(file("report.md"), func(w io.Writer) error {
		var b bytes.Buffer
		c := r.Config
		b.WriteString("# ratelab bench report\n\n")
		items := []string{
			"algorithms: " + orNone(codeList(c.Algorithms)),
			"paths: " + orNone(codeList(c.Paths)),
			fmt.Sprintf("limit: %d per %s", c.Limit, formatWindow(c.WindowMS)),
			fmt.Sprintf("clients: %d, pipeline: %d, allow-path keys: %d", c.Clients, c.Pipeline, c.Keys),
			fmt.Sprintf("first run: %s; rounds: %d; client GOMAXPROCS: %s", formatWindow(c.DurationMS), c.Rounds, procsDesc(c.Procs)),
		}
		if c.RedisBenchmark != "" {
			items = append(items, "redis-benchmark: "+code(c.RedisBenchmark))
		}
		items = append(items, "key prefix: "+orNone(code(c.Prefix)))
		writeRunHeader(&b, r.Redis, r.StartedAt, r.DurationMS, items)
		b.WriteString("\n## Throughput and latency\n\n")
		if err := writeBenchText(&b, r, true); err != nil {
			return err
		}
		if len(r.Results) > 0 {
			b.WriteString("\n## Runs\n\n")
			var rows [][]string
			for _, row := range r.Results {
				for i, run := range row.Runs {
					rows = append(rows, []string{escapeMarkdown(row.Algorithm), escapeMarkdown(row.Path), strconv.Itoa(i + 1),
						escapeMarkdown(run.Tool), strconv.FormatInt(run.Decisions, 10), formatFixed(run.Seconds, 2),
						formatFixed(run.PerS, 0), strconv.FormatInt(run.P50US, 10), strconv.FormatInt(run.P99US, 10),
						formatFixed(run.ServerUSPerCall, 2), formatFixed(run.ServerCPUPct, 0) + "%", formatFixed(run.ClientCPUPct, 0) + "%"})
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
	})
}

// benchPaths lists the paths of r's rows in first-appearance order.
func benchPaths(r *measure.BenchResults) []string {
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

func pathHasCDF(r *measure.BenchResults, path string) bool {
	for _, row := range r.Results {
		if row.Path == path && len(row.CDF) > 0 {
			return true
		}
	}
	return false
}

// maxNines is the highest percentile the CDF axis shows: 99.999%.
const maxNines = 5

// nines maps a quantile q (0..1) to the CDF's vertical axis: -log10(1-q),
// so 0.9 -> 1, 0.99 -> 2, 0.999 -> 3; q >= 0.99999 -> 5.
func nines(q float64) float64 {
	return -math.Log10(1 - math.Min(q, 1-math.Pow(10, -maxNines)))
}

// PlotLatencyCDF draws, for one path, the latency distribution of each
// algorithm (BenchRow.CDF): latency in µs on a logarithmic horizontal axis
// against the share of decisions at or below it, on a vertical axis
// stretched towards the tail (0%, 90%, 99%, 99.9%, ...). path's extension
// picks ".png" or ".svg". It is an error when no row of the path has a CDF.
func PlotLatencyCDF(r *measure.BenchResults, path, file string) error {
	if r == nil {
		return fmt.Errorf("reports: %s: no bench results", file)
	}
	var rows []measure.BenchRow
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, row := range r.Results {
		if row.Path != path || len(row.CDF) == 0 {
			continue
		}
		rows = append(rows, row)
		for _, pt := range row.CDF {
			if pt.US > 0 {
				xmin, xmax = math.Min(xmin, float64(pt.US)), math.Max(xmax, float64(pt.US))
			}
		}
	}
	if len(rows) == 0 || math.IsInf(xmin, 1) {
		return fmt.Errorf("reports: %s: no row of path %q has a latency distribution", file, path)
	}
	c := r.Config
	title := fmt.Sprintf("Decision latency, %s path (%d clients, pipeline %d)", path, c.Clients, c.Pipeline)
	p := newPlot(title, "latency (µs, round trip of the pipeline)", "decisions at or below")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{format: formatMicros}
	p.Y.Tick.Marker = ninesTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)
	legend := newLegend()
	order := map[string]int{}
	for _, row := range r.Results {
		if _, ok := order[row.Algorithm]; !ok {
			order[row.Algorithm] = len(order)
		}
	}
	for _, row := range rows {
		var xys plotter.XYs
		for _, pt := range row.CDF {
			if pt.US <= 0 {
				continue
			}
			xys = append(xys, plotter.XY{X: float64(pt.US), Y: nines(pt.Quantile)})
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("reports: %s: %s: %w", file, row.Algorithm, err)
		}
		k := order[row.Algorithm]
		line.Color = palette[k%len(palette)]
		line.Dashes = dashes[k%len(dashes)]
		line.Width = vg.Points(2)
		p.Add(line)
		legend.Add(row.Algorithm, padThumb{line})
	}
	p.X.Min, p.X.Max = xmin/1.3, xmax*1.3
	p.Y.Min, p.Y.Max = 0, maxNines+0.2

	fig, err := newFigure(file)
	if err != nil {
		return err
	}
	plotArea, legendArea := fig.layout(p, &legend)
	p.Draw(plotArea)
	legend.Draw(legendArea)
	return fig.save()
}

// ninesTicks labels the nines axis: 0%, 90%, 99%, ... 99.999%.
type ninesTicks struct{}

// Ticks implements plot.Ticker.
func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for n := 0; n <= maxNines; n++ {
		if float64(n) < lo || float64(n) > hi {
			continue
		}
		label := "0%"
		if n > 0 {
			label = strconv.FormatFloat(100*(1-math.Pow(10, -float64(n))), 'f', max(n-2, 0), 64) + "%"
		}
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: label})
		if n < maxNines { // 50% labelled (the median), 95%, 99.5%, ... as minor ticks
			half := plot.Tick{Value: nines(1 - 0.5*math.Pow(10, -float64(n)))}
			if n == 0 {
				half.Label = "50%"
			}
			ticks = append(ticks, half)
		}
	}
	return ticks
}

// formatMicros labels a power of ten of µs: "10 µs", "1 ms", "1 s".
func formatMicros(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + " s"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " µs"
}

// PlotThroughput draws decisions per second as bars, one group per
// algorithm and in it one bar per path for ratelab (its median), each with
// redis-benchmark's median beside it when compared; bars are labelled with
// their value when there is room, and the group with the ratios. path's
// extension picks ".png" or ".svg". It is an error when r has no rows.
func PlotThroughput(r *measure.BenchResults, file string) error {
	if r == nil || len(r.Results) == 0 {
		return fmt.Errorf("reports: %s: no bench results to plot", file)
	}
	compared := benchCompared(r)
	paths := benchPaths(r)
	var algs []string
	rows := map[[2]string]measure.BenchRow{}
	ymax := 0.0
	for _, row := range r.Results {
		if _, ok := rows[[2]string{row.Algorithm, ""}]; !ok {
			rows[[2]string{row.Algorithm, ""}] = row
			algs = append(algs, row.Algorithm)
		}
		rows[[2]string{row.Algorithm, row.Path}] = row
		ymax = math.Max(ymax, math.Max(row.DecisionsPerS, row.RedisBenchmarkPerS))
	}
	groups := make([]string, len(algs))
	for i, a := range algs {
		groups[i] = a
		for _, path := range paths {
			if row, ok := rows[[2]string{a, path}]; ok && row.RedisBenchmarkPerS > 0 {
				groups[i] += "\n" + path + " " + formatFixed(row.Ratio, 2) + "x"
			}
		}
	}
	if !(ymax > 0) || !finite(ymax) {
		ymax = 1
	}
	top := ymax * 1.15
	c := r.Config
	title := fmt.Sprintf("Decisions per second (%d clients, pipeline %d)", c.Clients, c.Pipeline)
	if compared {
		title = fmt.Sprintf("Decisions per second, ratelab / redis-benchmark (%d clients, pipeline %d)", c.Clients, c.Pipeline)
	}
	p := newPlot(title, "", "decisions per second")
	p.NominalX(groups...)
	p.Y.Tick.Marker = siTicks{n: 6}
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	p.Y.Min, p.Y.Max = 0, top
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	grid.Horizontal.Color = gridColor
	p.Add(grid)

	// series: per path, ratelab then redis-benchmark; ratelab in blues,
	// redis-benchmark in oranges, the deny path lighter
	type series struct {
		name  string
		path  string
		rb    bool
		color int
	}
	var ss []series
	for i, path := range paths {
		ss = append(ss, series{"ratelab, " + path, path, false, []int{0, 5}[min(i, 1)]})
		if compared {
			ss = append(ss, series{"redis-benchmark, " + path, path, true, []int{1, 4}[min(i, 1)]})
		}
	}
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.name
	}
	legend := newLegend()
	fig, err := newFigure(file)
	if err != nil {
		return err
	}
	plotArea, legendArea := fig.layoutNames(p, &legend, names)
	data := p.DataCanvas(plotArea)
	groupW := (data.Max.X - data.Min.X) / vg.Length(len(groups))
	slotW := min(0.85*groupW/vg.Length(len(ss)), 0.6*vg.Inch)
	labelled := slotW >= vg.Points(24)
	for k, s := range ss {
		vals := make(plotter.Values, len(algs))
		var lab plotter.XYLabels
		for i, a := range algs {
			row, ok := rows[[2]string{a, s.path}]
			if !ok {
				continue
			}
			v := row.DecisionsPerS
			if s.rb {
				v = row.RedisBenchmarkPerS
			}
			if !finite(v) || v < 0 {
				v = 0
			}
			vals[i] = v
			if v > 0 {
				lab.XYs = append(lab.XYs, plotter.XY{X: float64(i), Y: v})
				lab.Labels = append(lab.Labels, formatSI(v))
			}
		}
		bars, err := plotter.NewBarChart(vals, 0.9*slotW)
		if err != nil {
			return fmt.Errorf("reports: %s: %w", file, err)
		}
		bars.Color = palette[s.color%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = (vg.Length(k) - vg.Length(len(ss)-1)/2) * slotW
		p.Add(bars)
		legend.Add(s.name, padThumb{bars})
		if labelled && len(lab.XYs) > 0 {
			labels, err := plotter.NewLabels(lab)
			if err != nil {
				return fmt.Errorf("reports: %s: %w", file, err)
			}
			for i := range labels.TextStyle {
				labels.TextStyle[i].Font = font.From(sans, 7)
				labels.TextStyle[i].XAlign = draw.XCenter
			}
			labels.Offset = vg.Point{X: bars.Offset, Y: vg.Points(2)}
			p.Add(labels)
		}
	}
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	p.Y.Min, p.Y.Max = 0, top
	p.Draw(plotArea)
	legend.Draw(legendArea)
	return fig.save()
}

// formatSI writes a rate briefly: 61234 -> "61.2k", 1.2e6 -> "1.20M".
func formatSI(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// siTicks is niceTicks with labels in k and M.
type siTicks struct{ n int }

// Ticks implements plot.Ticker.
func (t siTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := niceTicks{n: t.n}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		v := ticks[i].Value
		switch {
		case v >= 1e6:
			ticks[i].Label = strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
		case v >= 1e3:
			ticks[i].Label = strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
		default:
			ticks[i].Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ticks
}
