package plots

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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
	compared := reports.BenchCompared(r)
	paths := reports.BenchPaths(r)
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
				groups[i] += "\n" + path + " " + reports.FormatFixed(row.VsRedisBenchmark, 2) + "x"
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
	ticks := niceTicks(t).Ticks(lo, hi)
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

func pathHasCDF(r *measure.BenchResults, path string) bool {
	for _, row := range r.Results {
		if row.Path == path && len(row.CDF) > 0 {
			return true
		}
	}
	return false
}
