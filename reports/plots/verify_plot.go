package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bar colours of PlotFamilies: a family that broke the property, one that
// held.
var (
	brokeColor = color.RGBA{0xD5, 0x5E, 0x00, 0xFF} // vermillion
	heldColor  = color.RGBA{0x00, 0x9E, 0x73, 0xFF} // bluish green
)

// PlotFamilies draws a verification's families as horizontal bars of
// their worst window against the limit (FamilyResult.MaxRatio), in report
// order from the top, with a dashed line at 1.0 (the limit) and each bar's
// value beside it; a family whose verdict is not Holds (nor Skipped) is
// vermillion, one that held green. Families without a ratio (no trials,
// isolation) are left out. path's extension picks ".png" (150 dpi) or
// ".svg"; the figure is 8 inches wide and 0.3 inch per family (plus 1.3).
// It is an error when no family has a ratio or the file cannot be written.
func PlotFamilies(r *measure.VerifyReport, path string) error {
	if r == nil {
		return fmt.Errorf("reports: %s: no verification", path)
	}
	var fams []measure.FamilyResult
	for _, f := range r.Families {
		if f.Trials > 0 && f.Family != "isolation" && finite(f.MaxRatio) {
			fams = append(fams, f)
		}
	}
	if len(fams) == 0 {
		return fmt.Errorf("reports: %s: no family has a ratio to plot", path)
	}
	n := len(fams)
	names := make([]string, n)
	right := 1.0
	for i, f := range fams {
		names[n-1-i] = f.Family // the first family at the top
		right = math.Max(right, f.MaxRatio)
	}
	right *= 1.35 // room for the labels
	p := newPlot(fmt.Sprintf("%s, %s: worst window of each family against the limit", r.Target, r.LimitDesc),
		"max accepted in one window / limit (above 1.0: the limit was exceeded)", "")
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.NominalY(names...)
	p.Y.Tick.Label.Font = font.From(sans, 10)
	p.X.Min, p.X.Max = 0, right
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	grid.Vertical.Color = gridColor
	p.Add(grid)
	for _, broke := range []bool{false, true} {
		vals := make(plotter.Values, n)
		var lab plotter.XYLabels
		for i, f := range fams {
			b := f.Verdict != measure.Holds && f.Verdict != measure.Skipped
			if b != broke {
				continue
			}
			vals[n-1-i] = f.MaxRatio
			lab.XYs = append(lab.XYs, plotter.XY{X: f.MaxRatio, Y: float64(n - 1 - i)})
			text := reports.FormatFixed(f.MaxRatio, 2) + "  " + string(f.Verdict)
			if f.MaxRatio > 1 && !b {
				text += " (not part of the verdict)"
			}
			lab.Labels = append(lab.Labels, text)
		}
		if len(lab.XYs) == 0 {
			continue
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(13))
		if err != nil {
			return fmt.Errorf("reports: %s: %w", path, err)
		}
		bars.Horizontal = true
		bars.Color, bars.LineStyle.Width = heldColor, 0
		if broke {
			bars.Color = brokeColor
		}
		p.Add(bars)
		labels, err := plotter.NewLabels(lab)
		if err != nil {
			return fmt.Errorf("reports: %s: %w", path, err)
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font = font.From(sans, 9)
			labels.TextStyle[i].YAlign = draw.YCenter
		}
		labels.Offset = vg.Point{X: vg.Points(4)}
		p.Add(labels)
	}
	l := refLine(1, p.Y.Min, 1, p.Y.Max, []vg.Length{vg.Points(5), vg.Points(3)})
	l.Color, l.Width = color.Black, vg.Points(1.2)
	p.Add(l)
	p.X.Min, p.X.Max = 0, right
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4

	fig, err := newFigureSized(path, figWidth, vg.Length(n)*0.3*vg.Inch+1.3*vg.Inch)
	if err != nil {
		return err
	}
	inner := draw.Crop(fig.dc, figMargin, -figMargin, figMargin, -figMargin)
	p.Draw(draw.Crop(inner, 0, 0, legendHeight, 0))
	drawLegendRow(draw.Crop(inner, 0, 0, 0, -(inner.Size().Y-legendHeight)), []legendEntry{
		{swatch(brokeColor), "broke the property"}, {swatch(heldColor), "held"}, {l, "the limit (1.0)"}})
	return fig.save()
}

// swatch is a legend thumbnail filled with c.
func swatch(c color.Color) plot.Thumbnailer {
	s, _ := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
	s.Color, s.LineStyle.Width = c, 0
	return s
}

// PlotCounterExample draws a verification's counter-example: its accepted
// decisions (CounterExample.Decisions) against time, as the cumulative
// accepted cost (steps, one dot per decision, at the time it was answered
// when that is known), with the limit as a dashed line, the cost above it
// filled red and the window that broke ([StartUS, EndUS]) shaded. Time is
// from the aligned window boundary, or from the trace's first request for
// a limiter whose windows start at a hit (CounterExample.FromHit); when
// the decisions sit far from that instant (a first-hit window a whole W
// after its first request), from the window's start, which the axis label
// places. Its unit is µs, ms, s, min or h, as the span needs. path's
// extension picks ".png" (150 dpi) or ".svg"; the figure is 8 x 4.5
// inches. It is an error when r has no counter-example with decisions, or
// the file cannot be written.
func PlotCounterExample(r *measure.VerifyReport, path string) error {
	if r == nil || r.CounterExample == nil || len(r.CounterExample.Decisions) == 0 {
		return fmt.Errorf("reports: %s: no counter-example to plot", path)
	}
	c := r.CounterExample
	title := fmt.Sprintf("%s: counter-example (%s), family %s", r.Target, c.Kind, c.Family)
	if c.Found != nil {
		title = fmt.Sprintf("%s: the counter-example shrunk to %d requests, %sx", r.Target, len(traceRequests(c)), reports.FormatFixed(c.Ratio(), 2))
	}
	return drawCounterExample(ceView{title: title, explain: c.Explain, decisions: c.Decisions, start: c.StartUS, end: c.EndUS,
		limit: c.Limit, origin: c.Origin(), from: reports.TimesFrom(c)}, path)
}

// PlotFoundCounterExample draws the counter-example as the trials found
// it, before shrinking (CounterExample.Found: the worst window, which the
// verdict's ratio is of), as PlotCounterExample draws the shrunk one. It
// is an error when r's counter-example was not shrunk or keeps no
// decisions of it (a file of an older ratelab), or the file cannot be
// written.
func PlotFoundCounterExample(r *measure.VerifyReport, path string) error {
	if r == nil || r.CounterExample == nil || r.CounterExample.Found == nil || len(r.CounterExample.Found.Decisions) == 0 {
		return fmt.Errorf("reports: %s: no counter-example as found to plot", path)
	}
	c, f := r.CounterExample, r.CounterExample.Found
	title := fmt.Sprintf("%s: the worst window found, %sx (family %s)", r.Target, reports.FormatFixed(f.Ratio, 2), c.Family)
	explain := fmt.Sprintf("as found: %d accepted within %s, %sx the limit of %d, after %d requests of trial %q",
		f.Accepted, usText(f.EndUS-f.StartUS), reports.FormatFixed(f.Ratio, 2), c.Limit, f.Requests, c.Trial)
	return drawCounterExample(ceView{title: title, explain: explain, decisions: f.Decisions, start: f.StartUS, end: f.EndUS,
		limit: c.Limit, origin: c.Origin(), from: reports.TimesFrom(c)}, path)
}

// traceRequests is c's trace's requests (none without a trace).
func traceRequests(c *measure.CounterExample) []measure.Step {
	if c.Trace == nil {
		return nil
	}
	return c.Trace.Requests
}

// ceView is one counter-example drawing: its decisions, the window that
// broke [start, end], µs from the trial's boundary, and origin, the
// instant (same scale) that the time axis counts from, named by from.
type ceView struct {
	title, explain string
	decisions      []measure.Evidence
	start, end     int64
	limit          int64
	origin         int64
	from           string
}

// drawCounterExample draws v into path (see PlotCounterExample).
func drawCounterExample(v ceView, path string) error {
	ds := append([]measure.Evidence(nil), v.decisions...)
	at := func(d measure.Evidence) int64 {
		if d.RecvUS != 0 {
			return d.RecvUS
		}
		return d.AtUS
	}
	sort.SliceStable(ds, func(a, b int) bool { return at(ds[a]) < at(ds[b]) })
	lo, hi := min(v.start, at(ds[0])), max(v.end, at(ds[len(ds)-1]))
	span := float64(hi - lo)
	unit, div := "µs", 1.0
	if span >= 2000 {
		unit, div = timeUnit(span / 1000)
		div *= 1000
	}
	// the axis counts from origin, or from the window's start when the
	// decisions are far from it (their offsets would be long numbers
	// that differ in the last digits)
	zero, axis := v.origin, fmt.Sprintf("time from %s (%s)", v.from, unit)
	if far := float64(lo - v.origin); math.Abs(far) > 10*math.Max(span, 1) {
		zero = v.start
		axis = fmt.Sprintf("time from the window's start (%s); the window starts %s after %s", unit, usText(v.start-v.origin), v.from)
	}
	x := func(t int64) float64 { return float64(t-zero) / div }
	pad := math.Max(0.05*span, 1) / div
	left, right := x(lo)-pad, x(hi)+pad

	var steps, dots plotter.XYs
	var sum int64
	steps = append(steps, plotter.XY{X: left, Y: 0})
	for _, d := range ds {
		sum += d.Cost
		steps = append(steps, plotter.XY{X: x(at(d)), Y: float64(sum)})
		dots = append(dots, plotter.XY{X: x(at(d)), Y: float64(sum)})
	}
	steps = append(steps, plotter.XY{X: right, Y: float64(sum)})
	limit := float64(v.limit)
	top := math.Max(float64(sum), limit) * 1.15
	if top <= 0 {
		top = 1
	}

	p := newPlot(v.title, axis, "accepted (cumulative cost)")
	p.Title.TextStyle.Font = font.From(sans, 12)
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)
	band, err := plotter.NewPolygon(plotter.XYs{{X: x(v.start), Y: 0}, {X: x(v.end), Y: 0},
		{X: x(v.end), Y: top}, {X: x(v.start), Y: top}})
	if err != nil {
		return fmt.Errorf("reports: %s: %w", path, err)
	}
	band.Color, band.LineStyle.Width = bandColor, 0
	p.Add(band)
	for _, ring := range excessRings(steps, limit) {
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return fmt.Errorf("reports: %s: %w", path, err)
		}
		poly.Color, poly.LineStyle.Width = overColor, 0
		p.Add(poly)
	}
	line, err := plotter.NewLine(steps)
	if err != nil {
		return fmt.Errorf("reports: %s: %w", path, err)
	}
	line.StepStyle = plotter.PostStep
	line.Color, line.Width = palette[0], vg.Points(1.6)
	p.Add(line)
	sc, err := plotter.NewScatter(dots)
	if err != nil {
		return fmt.Errorf("reports: %s: %w", path, err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: palette[0], Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
	p.Add(sc)
	p.Add(limitLine(left, right, limit))
	p.X.Min, p.X.Max = left, right
	p.Y.Min, p.Y.Max = 0, top

	fig, err := newFigure(path)
	if err != nil {
		return err
	}
	inner := draw.Crop(fig.dc, figMargin, -figMargin, figMargin, -figMargin)
	ts := draw.TextStyle{Color: color.Black, Font: font.From(sans, 10), XAlign: draw.XLeft, YAlign: draw.YTop, Handler: p.Title.TextStyle.Handler}
	lines := wrapWidth(v.explain, func(s string) bool { return ts.Width(s) <= inner.Size().X })
	lineH := ts.Height("Xg") * 1.25
	textH := vg.Length(len(lines)) * lineH
	p.Draw(draw.Crop(inner, 0, 0, legendHeight+textH+vg.Points(6), 0))
	for i, l := range lines {
		fig.dc.FillText(ts, vg.Point{X: inner.Min.X, Y: inner.Min.Y + legendHeight + textH - vg.Length(i)*lineH}, l)
	}
	drawLegendRow(draw.Crop(inner, 0, 0, 0, -(inner.Size().Y-legendHeight)), []legendEntry{
		{line, "accepted decisions (cumulative)"},
		{limitLine(0, 1, 0), fmt.Sprintf("limit L = %d", v.limit)},
		{swatch(overColor), "above L"},
		{swatch(bandColor), "the window that broke"},
	})
	return fig.save()
}

// usText is n µs as a duration a person reads ("59.999989s", "-1µs").
func usText(n int64) string {
	return (time.Duration(n) * time.Microsecond).String()
}

// wrapWidth breaks s at spaces into lines that fit (by fits), a word
// longer than a line on its own.
func wrapWidth(s string, fits func(string) bool) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = w
		case fits(cur + " " + w):
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
