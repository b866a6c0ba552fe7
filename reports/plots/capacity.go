package plots

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ratelab/ratelab/measure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotCapacity draws MEMORY USAGE per key against the limit, both axes
// logarithmic, one line with markers per algorithm, and marks the sorted
// set's listpack -> skiplist change: a dashed vertical line between
// zset-max-listpack-entries and the next entry (128 | 129 by default) and
// a label at each point where an algorithm's encoding changes. Rows with
// no memory are skipped. path's extension picks ".png" or ".svg".
func PlotCapacity(r *measure.CapacityResults, path string) error {
	if r == nil || len(r.Results) == 0 {
		return fmt.Errorf("reports: %s: no capacity results to plot", path)
	}
	order := map[string]int{}
	var names []string
	series := map[string]plotter.XYs{}
	encs := map[string][]string{}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, row := range r.Results {
		if row.MemoryBytes <= 0 || row.Limit <= 0 {
			continue
		}
		if _, ok := order[row.Algorithm]; !ok {
			order[row.Algorithm] = len(order)
			names = append(names, row.Algorithm)
		}
		x, y := float64(row.Limit), float64(row.MemoryBytes)
		series[row.Algorithm] = append(series[row.Algorithm], plotter.XY{X: x, Y: y})
		encs[row.Algorithm] = append(encs[row.Algorithm], row.Encoding)
		xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
	}
	if len(names) == 0 {
		return fmt.Errorf("reports: %s: no row has a memory figure", path)
	}
	title := "Memory per key at the limit (MEMORY USAGE, a full window)"
	p := newPlot(title, "limit (entries in the window)", "bytes per key")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = logTicks{format: func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }}
	p.Y.Tick.Marker = logTicks{format: formatDecimalBytes}
	// x: whole decades around the limits; y: a little air around the data
	lo, hi := math.Pow(10, math.Floor(math.Log10(xmin))), math.Pow(10, math.Ceil(math.Log10(xmax)))
	if lo == hi {
		lo, hi = lo/10, hi*10
	}
	ylo, yhi := ymin/1.6, ymax*1.6
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)

	legend := newLegend()
	zmax := r.Server.ZsetMaxListpackEntries
	if zmax <= 0 {
		zmax = 128
	}
	change := float64(zmax) + 0.5
	var changeLine *plotter.Line
	if change > lo && change < hi {
		changeLine = refLine(change, ylo, change, yhi, []vg.Length{vg.Points(5), vg.Points(3)})
		p.Add(changeLine)
	}
	var lab plotter.XYLabels
	for _, name := range names {
		xys := series[name]
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("reports: %s: %s: %w", path, name, err)
		}
		k := order[name]
		line.Color = palette[k%len(palette)]
		line.Dashes = dashes[k%len(dashes)]
		line.Width = vg.Points(2)
		pts.Color = line.Color
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(3)
		p.Add(line, pts)
		legend.Add(name, padThumb{line})
		for i := 1; i < len(xys); i++ {
			if e0, e1 := encs[name][i-1], encs[name][i]; e0 != e1 && e0 != "" && e1 != "" {
				lab.XYs = append(lab.XYs, xys[i])
				lab.Labels = append(lab.Labels, "  "+e0+" → "+e1)
			}
		}
	}
	if changeLine != nil {
		legend.Add(fmt.Sprintf("zset listpack → skiplist (entry %d)", zmax+1), padThumb{changeLine})
	}
	if len(lab.XYs) > 0 {
		labels, err := plotter.NewLabels(lab)
		if err != nil {
			return fmt.Errorf("reports: %s: %w", path, err)
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font = font.From(sans, 9)
			labels.TextStyle[i].XAlign = draw.XLeft
			labels.TextStyle[i].YAlign = draw.YTop
		}
		p.Add(labels)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, ylo, yhi

	fig, err := newFigure(path)
	if err != nil {
		return err
	}
	plotArea, legendArea := fig.layout(p, &legend)
	p.Draw(plotArea)
	legend.Draw(legendArea)
	return fig.save()
}

// logTicks labels the powers of ten between lo and hi with format, and
// puts unlabelled minor ticks at 2..9 times each power.
type logTicks struct{ format func(float64) string }

// Ticks implements plot.Ticker.
func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || !finite(hi) {
		return nil
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * base
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			label := ""
			if m == 1 {
				label = t.format(v)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// formatDecimalBytes labels a power of ten of bytes: "100 B", "1 kB", "10 MB".
func formatDecimalBytes(v float64) string {
	for _, u := range []struct {
		v float64
		s string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if v >= u.v {
			return strconv.FormatFloat(v/u.v, 'f', -1, 64) + " " + u.s
		}
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " B"
}
