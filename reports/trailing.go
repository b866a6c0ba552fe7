package reports

import (
	"fmt"
	"image/color"
	"math"

	"github.com/ratelab/ratelab/measure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// overColor marks the points of a trailing-window series above the limit.
var overColor = color.RGBA{0xC0, 0x00, 0x00, 0xFF}

// PlotTrailing draws, for one scenario, one panel per algorithm (stacked,
// sharing the time axis) of its trailing-window series (Row.Trailing: the
// accepted cost one key held inside its window (t-W, t], the most over the
// keys and over each stretch of time) against time from the anchor, with
// the limit L as a reference line; points above it are marked in red:
// there the algorithm admitted more than the limit within one window. Time
// is in seconds, minutes or hours, as the span needs. path's extension
// picks ".png" (150 dpi) or ".svg"; the figure is 8 inches wide and 1.5
// inches tall per panel (plus 0.7). It is an error when no row of scenario
// has a trailing-window series, or when the file cannot be written.
func PlotTrailing(r *measure.Results, scenario string, path string) error {
	if r == nil {
		return fmt.Errorf("reports: %s: no results", path)
	}
	var rows []measure.Row
	xmax, ymax := 0.0, 0.0
	for _, row := range r.Results {
		if row.Scenario != scenario || len(row.Trailing) == 0 {
			continue
		}
		rows = append(rows, row)
		for _, pt := range row.Trailing {
			if finite(pt.TMS) {
				xmax, ymax = math.Max(xmax, pt.TMS), math.Max(ymax, float64(pt.Accepted))
			}
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("reports: %s: no row of scenario %q has a trailing-window series", path, scenario)
	}
	unit, div := "s", 1000.0
	switch {
	case xmax >= 3*3600e3:
		unit, div = "h", 3600e3
	case xmax >= 3*60e3:
		unit, div = "min", 60e3
	}
	limit, windowMS := rows[0].Limit, rows[0].WindowMS
	top := math.Max(ymax, 1.25*float64(limit)) * 1.1
	if top <= 0 {
		top = 1
	}
	right := math.Max(xmax/div, 1e-3)
	order := algorithmOrder(r)

	panels := make([][]*plot.Plot, len(rows))
	for i, row := range rows {
		title := fmt.Sprintf("%s — in (t-W, t], worst key, W = %s, L = %d", row.Algorithm, formatWindow(windowMS), limit)
		if row.PerKey != nil {
			title = fmt.Sprintf("%s — %d of %d keys over the limit, worst %sx (%s)", row.Algorithm,
				row.PerKey.KeysOver, row.PerKey.Keys, formatFixed(row.PerKey.WorstRatio, 2), row.PerKey.WorstKey)
		}
		xl := ""
		if i == len(rows)-1 {
			xl = fmt.Sprintf("time from the anchor (%s); trailing window W = %s, limit L = %d per key", unit, formatWindow(windowMS), limit)
		}
		p := newPlot(title, xl, "accepted")
		p.Title.TextStyle.Font = font.From(sans, 10)
		p.Title.Padding = vg.Points(3)
		p.Y.Tick.Marker = niceTicks{n: 3}
		grid := plotter.NewGrid()
		grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
		p.Add(grid)
		var xys, over plotter.XYs
		for _, pt := range row.Trailing {
			if !finite(pt.TMS) {
				continue
			}
			xy := plotter.XY{X: pt.TMS / div, Y: float64(pt.Accepted)}
			xys = append(xys, xy)
			if pt.Accepted > limit {
				over = append(over, xy)
			}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("reports: %s: %s: %w", path, row.Algorithm, err)
		}
		line.Color = palette[order[row.Algorithm]%len(palette)]
		line.Width = vg.Points(1)
		p.Add(line)
		l := refLine(0, float64(limit), right, float64(limit), []vg.Length{vg.Points(5), vg.Points(3)})
		p.Add(l)
		if len(over) > 0 {
			sc, err := plotter.NewScatter(over)
			if err != nil {
				return fmt.Errorf("reports: %s: %s: %w", path, row.Algorithm, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: overColor, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
		p.X.Min, p.X.Max = 0, right
		p.Y.Min, p.Y.Max = 0, top
		panels[i] = []*plot.Plot{p}
	}

	height := vg.Length(len(rows))*1.5*vg.Inch + 0.7*vg.Inch
	fig, err := newFigureSized(path, figWidth, height)
	if err != nil {
		return err
	}
	inner := draw.Crop(fig.dc, figMargin, -figMargin, figMargin, -figMargin)
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Points(4)}
	canvases := plot.Align(panels, tiles, inner)
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	return fig.save()
}

// scenariosWithTrailing lists, in first-appearance order, the scenarios
// with at least one row that has a trailing-window series.
func scenariosWithTrailing(r *measure.Results) []string {
	var out []string
	seen := map[string]bool{}
	for _, row := range r.Results {
		if len(row.Trailing) > 0 && !seen[row.Scenario] {
			seen[row.Scenario] = true
			out = append(out, row.Scenario)
		}
	}
	return out
}
