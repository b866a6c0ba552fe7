package plots

import (
	"fmt"
	"image/color"
	"math"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of the trailing-window panels: the excess over the limit is
// filled red; the window that holds the most is a grey band.
var (
	overColor = color.NRGBA{0xD0, 0x10, 0x10, 0xA0}
	bandColor = color.NRGBA{0x80, 0x80, 0x80, 0x38}
	peakColor = color.RGBA{0x00, 0x00, 0x00, 0xFF}
	// boundaryColor draws the aligned window boundaries (every W from the
	// anchor); whyColor the sentence under a panel that broke.
	boundaryColor = color.Gray{0x70}
	whyColor      = color.RGBA{0x8A, 0x1C, 0x00, 0xFF}
)

// boundaryDashes is the pattern of a window boundary's line; the
// anchor's is solid.
var boundaryDashes = []vg.Length{vg.Points(2), vg.Points(2)}

// anchorLine is the vertical line at the anchor (t = 0), top high.
func anchorLine(top float64) *plotter.Line {
	l := refLine(0, 0, 0, top, nil)
	l.Color, l.Width = color.Black, vg.Points(1)
	return l
}

// Trailing-window figure geometry.
const (
	panelHeight  = 1.5 * vg.Inch
	titleHeight  = 0.45 * vg.Inch
	legendHeight = 0.35 * vg.Inch
)

// timeUnit picks the unit a person reads for a span of ms: "ms" under 2 s,
// "s" under 3 min, "min" under 3 h, "h" above; div converts ms to it.
func timeUnit(spanMS float64) (unit string, div float64) {
	switch {
	case spanMS < 2e3:
		return "ms", 1
	case spanMS < 3*60e3:
		return "s", 1e3
	case spanMS < 3*3600e3:
		return "min", 60e3
	}
	return "h", 3600e3
}

// PlotTrailing draws, for one scenario, the picture of the window: one
// panel per algorithm (stacked, sharing both axes) of its trailing-window
// series (Row.Trailing: the accepted cost within (t-W, t] against t, from
// the scenario's anchor, as steps), with the limit L as a dashed line, the
// excess above L filled red, the window that holds the most (the window
// ending at Row.MaxWindowEndMS) as a grey band at its whole width W with a
// marker at its end, the anchor (t = 0: the aligned window boundary the
// scenario aims at) as a solid vertical line and the other aligned window
// boundaries (every W from it) dotted. Under the panel of an algorithm
// that exceeded its limit, one sentence says why (reports.WhyBroke).
// Time is in ms, s, min or h, as the span needs. The figure's title
// names the scenario, W and L; a legend row under the panels names the
// marks. path's extension picks ".png" (150 dpi) or ".svg"; the figure is
// 8 inches wide and 1.5 inches tall per panel (plus 0.8). It is an error
// when no row of scenario has a trailing-window series, or when the file
// cannot be written.
func PlotTrailing(r *measure.Results, scenario string, path string) error {
	fig, err := trailingFigure(r, scenario, path)
	if err != nil {
		return err
	}
	return fig.save()
}

// trailingFigure is PlotTrailing's figure, drawn and not yet saved.
func trailingFigure(r *measure.Results, scenario string, path string) (*figure, error) {
	if r == nil {
		return nil, fmt.Errorf("reports: %s: no results", path)
	}
	var rows []measure.Row
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, row := range r.Results {
		if row.Scenario != scenario || len(row.Trailing) == 0 {
			continue
		}
		rows = append(rows, row)
		for _, pt := range row.Trailing {
			if finite(pt.TMS) {
				xmin, xmax = math.Min(xmin, pt.TMS), math.Max(xmax, pt.TMS)
				ymax = math.Max(ymax, float64(pt.Accepted))
			}
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("reports: %s: no row of scenario %q has a trailing-window series", path, scenario)
	}
	if math.IsInf(xmin, 1) {
		return nil, fmt.Errorf("reports: %s: scenario %q has no finite trailing-window point", path, scenario)
	}
	limit, windowMS := rows[0].Limit, rows[0].WindowMS
	xmin = math.Min(xmin, 0)
	for _, row := range rows { // each worst window whole: (end-W, end]
		if row.MaxInWindow > 0 && finite(row.MaxWindowEndMS) {
			xmin = math.Min(xmin, row.MaxWindowEndMS-float64(windowMS))
		}
	}
	unit, div := timeUnit(xmax - xmin)
	left, right := xmin/div, xmax/div
	if pad := 0.02 * (right - left); pad > 0 {
		left, right = left-pad, right+pad
	} else {
		left, right = left-1, right+1
	}
	top := math.Max(ymax, float64(limit)) * 1.18
	if top <= 0 {
		top = 1
	}
	order := algorithmOrder(r)

	panels := make([][]*plot.Plot, len(rows))
	for i, row := range rows {
		p, err := trailingPanel(row, limit, windowMS, div, left, right, top, order[row.Algorithm])
		if err != nil {
			return nil, fmt.Errorf("reports: %s: %s: %w", path, row.Algorithm, err)
		}
		why := reports.WhyBroke(row)
		if why != "" {
			p.X.Label.Text = row.Algorithm + ": " + why
			p.X.Label.TextStyle.Font = font.From(sans, 9)
			p.X.Label.TextStyle.Color = whyColor
		}
		if i < len(rows)-1 {
			p.X.Tick.Marker = unlabelled{niceTicks{n: 8}} // one set of labels, under the last panel
		}
		panels[i] = []*plot.Plot{p}
	}

	axisH := vg.Points(16) // the time axis's title, under the last panel's labels
	height := vg.Length(len(rows))*panelHeight + titleHeight + legendHeight + axisH
	fig, err := newFigureSized(path, figWidth, height)
	if err != nil {
		return nil, err
	}
	inner := draw.Crop(fig.dc, figMargin, -figMargin, figMargin, -figMargin)

	title := fmt.Sprintf("%s: accepted within the trailing window (t-W, t], W = %s, limit L = %d", scenario, reports.FormatWindow(windowMS), limit)
	if rows[0].PerKey != nil {
		title = fmt.Sprintf("%s: worst key's accepted within (t-W, t], W = %s, limit L = %d per key", scenario, reports.FormatWindow(windowMS), limit)
	}
	ts := draw.TextStyle{Color: color.Black, Font: font.From(sans, 13), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.New().Title.TextStyle.Handler}
	fig.dc.FillText(ts, vg.Point{X: (inner.Min.X + inner.Max.X) / 2, Y: inner.Max.Y}, title)

	body := draw.Crop(inner, 0, 0, legendHeight+axisH, -titleHeight)
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Points(6)}
	canvases := plot.Align(panels, tiles, body)
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	dataLeft := panels[0][0].DataCanvas(canvases[0][0]).Min.X
	axis := fmt.Sprintf("time t from the anchor (%s); t = 0 is the aligned window boundary the scenario aims at", unit)
	ats := draw.TextStyle{Color: color.Black, Font: font.From(sans, 11), XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: ts.Handler}
	fig.dc.FillText(ats, vg.Point{X: (inner.Min.X + inner.Max.X) / 2, Y: inner.Min.Y + legendHeight + axisH/2}, axis)
	drawLegendRow(draw.Crop(inner, dataLeft-inner.Min.X, 0, 0, -(inner.Size().Y-legendHeight)), trailingLegend(limit))
	return fig, nil
}

// trailingPanel is one algorithm's panel of PlotTrailing.
func trailingPanel(row measure.Row, limit, windowMS int64, div, left, right, top float64, k int) (*plot.Plot, error) {
	title := fmt.Sprintf("%s: at most %d in one window, %sx L", row.Algorithm, row.MaxInWindow, reports.FormatFixed(row.Ratio, 2))
	if row.PerKey != nil {
		title = fmt.Sprintf("%s: %d of %d keys over the limit, worst %sx (%s)", row.Algorithm,
			row.PerKey.KeysOver, row.PerKey.Keys, reports.FormatFixed(row.PerKey.WorstRatio, 2), row.PerKey.WorstKey)
	}
	p := newPlot(title, "", "in (t-W, t]")
	p.Title.TextStyle.Font = font.From(sans, 10)
	p.Title.Padding = vg.Points(3)
	p.Y.Label.TextStyle.Font = font.From(sans, 9)
	p.Y.Tick.Marker = niceTicks{n: 3}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)

	var xys plotter.XYs
	for _, pt := range row.Trailing {
		if finite(pt.TMS) {
			xys = append(xys, plotter.XY{X: pt.TMS / div, Y: float64(pt.Accepted)})
		}
	}
	if len(xys) > 0 && xys[0].X > left {
		xys = append(plotter.XYs{{X: left, Y: 0}}, xys...)
	}

	// the aligned window boundaries in view, the anchor (t = 0) apart
	if windowMS > 0 {
		w := float64(windowMS) / div
		for k := math.Ceil(left / w); k*w <= right; k++ {
			if k == 0 {
				continue
			}
			l := refLine(k*w, 0, k*w, top, boundaryDashes)
			l.Color, l.Width = boundaryColor, vg.Points(0.8)
			p.Add(l)
		}
	}
	if left <= 0 && right >= 0 {
		p.Add(anchorLine(top))
	}

	// the window that holds the most: (end-W, end]
	if row.MaxInWindow > 0 && finite(row.MaxWindowEndMS) {
		end := row.MaxWindowEndMS / div
		start := (row.MaxWindowEndMS - float64(windowMS)) / div
		band, err := plotter.NewPolygon(plotter.XYs{{X: start, Y: 0}, {X: end, Y: 0}, {X: end, Y: top}, {X: start, Y: top}})
		if err != nil {
			return nil, err
		}
		band.Color, band.LineStyle.Width = bandColor, 0
		p.Add(band)
	}
	for _, ring := range excessRings(xys, float64(limit)) {
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return nil, err
		}
		poly.Color, poly.LineStyle.Width = overColor, 0
		p.Add(poly)
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	line.StepStyle = plotter.PostStep    // the sum holds until the next change
	line.Color = palette[k%len(palette)] // solid: each panel holds one algorithm
	line.Width = vg.Points(1.6)
	p.Add(line)
	if limit > 0 {
		p.Add(limitLine(left, right, float64(limit)))
	}
	if row.MaxInWindow > 0 && finite(row.MaxWindowEndMS) {
		peak, err := plotter.NewScatter(plotter.XYs{{X: row.MaxWindowEndMS / div, Y: float64(row.MaxInWindow)}})
		if err != nil {
			return nil, err
		}
		peak.GlyphStyle = draw.GlyphStyle{Color: peakColor, Radius: vg.Points(3), Shape: draw.PyramidGlyph{}}
		p.Add(peak)
	}
	p.X.Min, p.X.Max = left, right
	p.Y.Min, p.Y.Max = 0, top
	return p, nil
}

// unlabelled is a Ticker's ticks without their labels.
type unlabelled struct{ plot.Ticker }

// Ticks implements plot.Ticker.
func (u unlabelled) Ticks(lo, hi float64) []plot.Tick {
	ts := u.Ticker.Ticks(lo, hi)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}

// limitLine is the dashed horizontal line at the limit.
func limitLine(x0, x1, y float64) *plotter.Line {
	l := refLine(x0, y, x1, y, []vg.Length{vg.Points(5), vg.Points(3)})
	l.Width = vg.Points(1.2)
	l.Color = color.Black
	return l
}

// excessRings returns, for a step series (each y holds until the next x),
// one outline per stretch above y = limit, closed along the limit line.
func excessRings(xys plotter.XYs, limit float64) []plotter.XYs {
	var rings []plotter.XYs
	var cur plotter.XYs
	for i := 0; i+1 < len(xys); i++ {
		a, b := xys[i], xys[i+1]
		if a.Y > limit {
			if cur == nil {
				cur = plotter.XYs{{X: a.X, Y: limit}}
			}
			cur = append(cur, plotter.XY{X: a.X, Y: a.Y}, plotter.XY{X: b.X, Y: a.Y})
			continue
		}
		if cur != nil {
			rings = append(rings, append(cur, plotter.XY{X: a.X, Y: limit}))
			cur = nil
		}
	}
	if cur != nil {
		rings = append(rings, append(cur, plotter.XY{X: cur[len(cur)-1].X, Y: limit}))
	}
	return rings
}

// legendEntry is one mark of a legend row: a thumbnail and its text.
type legendEntry struct {
	thumb plot.Thumbnailer
	text  string
}

// trailingLegend names PlotTrailing's marks.
func trailingLegend(limit int64) []legendEntry {
	over, _ := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
	over.Color, over.LineStyle.Width = overColor, 0
	band, _ := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
	band.Color, band.LineStyle.Width = bandColor, 0
	peak, _ := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}})
	peak.GlyphStyle = draw.GlyphStyle{Color: peakColor, Radius: vg.Points(3), Shape: draw.PyramidGlyph{}}
	boundary := refLine(0, 0, 1, 0, boundaryDashes)
	boundary.Color, boundary.Width = boundaryColor, vg.Points(0.8)
	anchor := refLine(0, 0, 1, 0, nil)
	anchor.Color, anchor.Width = color.Black, vg.Points(1)
	return []legendEntry{
		{limitLine(0, 1, 0), fmt.Sprintf("L = %d", limit)},
		{over, "above L"},
		{band, "worst window (width W)"},
		{peak, "its end"},
		{anchor, "anchor"},
		{boundary, "boundaries (every W)"},
	}
}

// drawLegendRow draws entries left to right in c, one line high.
func drawLegendRow(c draw.Canvas, entries []legendEntry) {
	ts := draw.TextStyle{Color: color.Black, Font: font.From(sans, 10), YAlign: draw.YCenter, Handler: plot.New().Title.TextStyle.Handler}
	thumbW, gap := vg.Points(24), vg.Points(14)
	x := c.Min.X
	midY := c.Min.Y + c.Size().Y/2
	h := vg.Points(9)
	for _, e := range entries {
		tc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: midY - h/2}, Max: vg.Point{X: x + thumbW, Y: midY + h/2}}}
		e.thumb.Thumbnail(&tc)
		x += thumbW + vg.Points(4)
		c.FillText(ts, vg.Point{X: x, Y: midY}, e.text)
		x += ts.Width(e.text) + gap
	}
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
