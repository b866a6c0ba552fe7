package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/reports"
)

// Figure geometry: 8 x 4.5 inches; PNGs at 150 dpi (1200 x 675 pixels).
const (
	figWidth  = 8 * vg.Inch
	figHeight = 4.5 * vg.Inch
	pngDPI    = 150
	figMargin = vg.Length(8)  // around the whole figure, points
	legendGap = vg.Length(14) // between the plot and the legend column, points
)

// sans is the plots' typeface. It is set on every text style of each plot
// rather than through plot.DefaultFont, so that drawing never writes to a
// global of gonum/plot and plots can be drawn concurrently.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// palette is Okabe & Ito's colour-blind-safe palette (without yellow, which
// is unreadable on white); algorithms take colours in row order.
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.RGBA{0x00, 0x00, 0x00, 0xFF}, // black
}

// dashes gives each algorithm's line its own pattern as well as its colour,
// so lines stay apart in grey print and where they overlap.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(7), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(9), vg.Points(3), vg.Points(2), vg.Points(3)},
	{vg.Points(4), vg.Points(4)},
	{vg.Points(9), vg.Points(3), vg.Points(2), vg.Points(3), vg.Points(2), vg.Points(3)},
}

var (
	refColor  = color.Gray{0x40}
	gridColor = color.Gray{0xE0}
)

// PlotTimeline draws, for one scenario, the cumulative accepted cost of
// each algorithm over time (Row.Timeline) as step lines, against time from
// the aligned window boundary in ms, s, min or h (as the span needs), with
// a dashed vertical line at the boundary (t = 0). It is the secondary plot:
// a cumulative count is not a window's count, so no limit line is drawn
// (PlotTrailing draws the window against the limit).
// The legend sits in a column right of the data. path's extension picks
// the format: ".png" (150 dpi) or ".svg"; the figure is 8 x 4.5 inches.
// Non-finite points are skipped. It is an error when no row of scenario has
// a finite timeline point, or when the file cannot be written.
func PlotTimeline(r *measure.Results, scenario string, path string) error {
	fig, err := timelineFigure(r, scenario, path)
	if err != nil {
		return err
	}
	return fig.save()
}

// timelineFigure is PlotTimeline's figure, drawn and not yet saved.
func timelineFigure(r *measure.Results, scenario string, path string) (*figure, error) {
	if r == nil {
		return nil, fmt.Errorf("reports: %s: no results", path)
	}
	var rows []measure.Row
	for _, row := range r.Results {
		if row.Scenario == scenario && len(row.Timeline) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("reports: %s: no row of scenario %q has a timeline", path, scenario)
	}

	// Steps in the unit the span needs; all series start from 0 at the
	// earliest decision.
	lo0, hi0 := math.Inf(1), math.Inf(-1)
	for _, row := range rows {
		for _, pt := range row.Timeline {
			if finite(pt.TMS) {
				lo0, hi0 = math.Min(lo0, pt.TMS), math.Max(hi0, pt.TMS)
			}
		}
	}
	unit, div := timeUnit(math.Max(hi0, 0) - math.Min(lo0, 0))
	series := make([]plotter.XYs, len(rows))
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for i, row := range rows {
		for _, pt := range row.Timeline {
			x, y := pt.TMS/div, float64(pt.Accepted)
			if !finite(x) {
				continue
			}
			series[i] = append(series[i], plotter.XY{X: x, Y: y})
			xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, y)
		}
		sort.SliceStable(series[i], func(a, b int) bool { return series[i][a].X < series[i][b].X })
	}
	if math.IsInf(xmin, 1) {
		return nil, fmt.Errorf("reports: %s: scenario %q has no finite timeline point", path, scenario)
	}

	limit, windowMS := rows[0].Limit, rows[0].WindowMS
	for _, row := range rows {
		if row.Limit > 0 {
			limit, windowMS = row.Limit, row.WindowMS
			break
		}
	}
	title := fmt.Sprintf("%s: total accepted since the start (limit %d per %s)", scenario, limit, reports.FormatWindow(windowMS))
	if limit <= 0 {
		title = fmt.Sprintf("%s: total accepted since the start", scenario)
	}
	p := newPlot(title, fmt.Sprintf("time from window boundary (%s)", unit), "accepted (cost units, cumulative)")
	legend := newLegend()

	// Ranges: the boundary always in view, with a little air.
	lo, hi := math.Min(xmin, 0), math.Max(xmax, 0)
	pad := 0.03 * (hi - lo)
	if pad == 0 {
		pad = 0.5
	}
	top := ymax * 1.08
	if top <= 0 {
		top = 1
	}
	p.X.Min, p.X.Max = lo-pad, hi+pad
	p.Y.Min, p.Y.Max = 0, top

	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)

	var refs []*plotter.Line
	var refNames []string
	boundary := refLine(0, 0, 0, top, []vg.Length{vg.Points(3), vg.Points(3)})
	refs = append(refs, boundary)
	refNames = append(refNames, "window boundary")
	for _, l := range refs {
		p.Add(l)
	}

	order := algorithmOrder(r)
	for i, row := range rows {
		xys := append(plotter.XYs{{X: xmin, Y: 0}}, series[i]...)
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("reports: %s: %s: %w", path, row.Algorithm, err)
		}
		line.StepStyle = plotter.PostStep // the count holds until the next decision
		k := order[row.Algorithm]
		line.Color = palette[k%len(palette)]
		line.Dashes = dashes[k%len(dashes)]
		line.Width = vg.Points(2)
		p.Add(line)
		legend.Add(row.Algorithm, padThumb{line})
	}
	for i, l := range refs {
		legend.Add(refNames[i], padThumb{l})
	}
	// Add may have widened the ranges; keep the ones chosen above.
	p.X.Min, p.X.Max = lo-pad, hi+pad
	p.Y.Min, p.Y.Max = 0, top

	fig, err := newFigure(path)
	if err != nil {
		return nil, err
	}
	plotArea, legendArea := fig.layout(p, &legend)
	p.Draw(plotArea)
	legend.Draw(legendArea)
	return fig, nil
}

// PlotRatio draws a grouped bar chart of Row.Ratio (largest accepted cost
// in any one window divided by the limit): one group per scenario, one bar
// per algorithm, each bar labelled with its value, and a dashed reference
// line at 1.0 (the limit). The legend sits in a column right of the bars.
// A NaN ratio is drawn as an empty bar labelled "n/a", +Inf as a bar to the
// top labelled "inf". path's extension picks ".png" (150 dpi) or ".svg";
// the figure is 8 x 4.5 inches. It is an error when r has no rows or the
// file cannot be written.
func PlotRatio(r *measure.Results, path string) error {
	if r == nil || len(r.Results) == 0 {
		return fmt.Errorf("reports: %s: no results to plot", path)
	}
	var scenarios, algorithms []string
	scIdx, order := map[string]int{}, algorithmOrder(r)
	for _, row := range r.Results {
		if _, ok := scIdx[row.Scenario]; !ok {
			scIdx[row.Scenario] = len(scenarios)
			scenarios = append(scenarios, row.Scenario)
		}
	}
	algorithms = make([]string, len(order))
	for a, k := range order {
		algorithms[k] = a
	}

	// ratio[a][s]; present marks which combinations ran.
	ratio := make([][]float64, len(algorithms))
	present := make([][]bool, len(algorithms))
	for k := range algorithms {
		ratio[k] = make([]float64, len(scenarios))
		present[k] = make([]bool, len(scenarios))
	}
	maxFinite := 1.0
	for _, row := range r.Results {
		k, s := order[row.Algorithm], scIdx[row.Scenario]
		ratio[k][s], present[k][s] = row.Ratio, true
		if finite(row.Ratio) {
			maxFinite = math.Max(maxFinite, row.Ratio)
		}
	}
	top := maxFinite * 1.15 // room for the value labels

	p := newPlot("Worst window against the limit (above 1.0: limit exceeded)", "scenario",
		"max accepted in any window / limit")
	p.NominalX(scenarios...)
	p.X.Label.Padding = vg.Points(6)
	p.X.Min, p.X.Max = -0.5, float64(len(scenarios))-0.5
	p.Y.Min, p.Y.Max = 0, top
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	grid.Horizontal.Color = gridColor
	p.Add(grid)

	legend := newLegend()
	limitLine := refLine(p.X.Min, 1, p.X.Max, 1, []vg.Length{vg.Points(6), vg.Points(3)})
	limitLine.Width = vg.Points(1.5)
	names := append(append([]string{}, algorithms...), "limit (ratio 1.0)")

	fig, err := newFigure(path)
	if err != nil {
		return err
	}
	plotArea, legendArea := fig.layoutNames(p, &legend, names)

	// Bars are sized in points: slots fill 80% of each group (at most 0.6
	// inch each) and a bar 90% of its slot.
	data := p.DataCanvas(plotArea)
	groupW := (data.Max.X - data.Min.X) / vg.Length(len(scenarios))
	slotW := min(0.8*groupW/vg.Length(len(algorithms)), 0.6*vg.Inch)
	barW := 0.9 * slotW

	for k, alg := range algorithms {
		vals := make(plotter.Values, len(scenarios))
		var lab plotter.XYLabels
		for s := range scenarios {
			if !present[k][s] {
				continue
			}
			v, text := ratio[k][s], reports.FormatFixed(ratio[k][s], 2)
			switch {
			case math.IsNaN(v):
				v = 0
			case math.IsInf(v, 1):
				v = maxFinite
			case math.IsInf(v, -1) || v < 0:
				v = 0
			}
			vals[s] = v
			lab.XYs = append(lab.XYs, plotter.XY{X: float64(s), Y: v})
			lab.Labels = append(lab.Labels, text)
		}
		bars, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return fmt.Errorf("reports: %s: %s: %w", path, alg, err)
		}
		bars.Color = palette[k%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = (vg.Length(k) - vg.Length(len(algorithms)-1)/2) * slotW
		p.Add(bars)
		legend.Add(alg, padThumb{bars})

		if len(lab.XYs) > 0 {
			labels, err := plotter.NewLabels(lab)
			if err != nil {
				return fmt.Errorf("reports: %s: %s: %w", path, alg, err)
			}
			for i := range labels.TextStyle {
				sty := &labels.TextStyle[i]
				sty.Font = font.From(sans, 8)
				sty.XAlign = draw.XCenter
				if sty.Width(labels.Labels[i])+vg.Points(2) > barW {
					// Too wide for the bar: read it upwards instead.
					sty.Rotation, sty.XAlign, sty.YAlign = math.Pi/2, draw.XLeft, draw.YCenter
				}
			}
			labels.Offset = vg.Point{X: bars.Offset, Y: vg.Points(2)}
			p.Add(labels)
		}
	}
	p.Add(limitLine)
	legend.Add(names[len(names)-1], padThumb{limitLine})
	p.X.Min, p.X.Max = -0.5, float64(len(scenarios))-0.5
	p.Y.Min, p.Y.Max = 0, top

	p.Draw(plotArea)
	legend.Draw(legendArea)
	return fig.save()
}

// newPlot returns a plot with sans-serif text everywhere.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, 11)
		ax.Tick.Label.Font = font.From(sans, 10)
		ax.Tick.Marker = niceTicks{n: 8}
	}
	return p
}

// niceTicks labels about n ticks at steps of 1, 2, 2.5 or 5 times a power
// of ten, with an unlabelled minor tick halfway between labels; every label
// has the same number of decimals ("0.0", "0.5", "1.0").
type niceTicks struct{ n int }

// Ticks implements plot.Ticker.
func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !finite(lo) || !finite(hi) || hi <= lo {
		return nil
	}
	raw := (hi - lo) / float64(max(t.n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, decimals := 10*mag, -int(math.Floor(math.Log10(mag)))-1
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step, decimals = m*mag, -int(math.Floor(math.Log10(mag)))
			if m == 2.5 {
				decimals++
			}
			break
		}
	}
	decimals = max(decimals, 0)
	var ticks []plot.Tick
	for i := math.Ceil(lo/step*2) / 2; i*step <= hi+step*1e-9; i += 0.5 {
		v := i * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		label := ""
		if i == math.Trunc(i) {
			label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// padThumb draws a legend thumbnail a little narrower than its slot, so
// the entry's text does not touch it.
type padThumb struct{ plot.Thumbnailer }

// Thumbnail implements plot.Thumbnailer.
func (p padThumb) Thumbnail(c *draw.Canvas) {
	cc := draw.Crop(*c, 0, -vg.Points(6), 0, 0)
	p.Thumbnailer.Thumbnail(&cc)
}

// newLegend returns a legend meant to be drawn in its own column: entries
// from the top, icons on the left.
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 10)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(30)
	l.Padding = vg.Points(5)
	return l
}

// refLine is a thin two-point reference line (a plotter.Function would
// have no data range).
func refLine(x0, y0, x1, y1 float64, dash []vg.Length) *plotter.Line {
	l := &plotter.Line{XYs: plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y1}}}
	l.LineStyle = draw.LineStyle{Color: refColor, Width: vg.Points(1.2), Dashes: dash}
	return l
}

// algorithmOrder numbers the algorithms of r in first-appearance order, so
// one algorithm has the same colour and dashes in every plot of a run.
func algorithmOrder(r *measure.Results) map[string]int {
	order := map[string]int{}
	for _, row := range r.Results {
		if _, ok := order[row.Algorithm]; !ok {
			order[row.Algorithm] = len(order)
		}
	}
	return order
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// figure is one output file's canvas, chosen by the path's extension.
type figure struct {
	path string
	c    vg.CanvasWriterTo
	dc   draw.Canvas
	svg  bool
}

func newFigure(path string) (*figure, error) { return newFigureSized(path, figWidth, figHeight) }

// newFigureSized is newFigure for a figure of width x height.
func newFigureSized(path string, width, height vg.Length) (*figure, error) {
	f := &figure{path: path}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		f.c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(pngDPI))}
	case ".svg":
		f.c, f.svg = vgsvg.New(width, height), true
	default:
		return nil, fmt.Errorf("reports: %s: unknown plot format (want a .png or .svg file)", path)
	}
	f.dc = draw.New(f.c)
	if f.svg {
		// White under the whole figure, margins and legend column included
		// (plot.Draw fills only its own area; SVGs would be transparent).
		// A PNG canvas starts white (vgimg's background): filling it again
		// changed no pixel and took a sixth of a plot's time.
		f.dc.SetColor(color.White)
		f.dc.Fill(f.dc.Rectangle.Path())
	}
	return f, nil
}

// layout splits the figure into the plot's area and, right of it, a
// column as wide as the legend's entries, starting level with the top of
// the data area, so the legend never covers data.
func (f *figure) layout(p *plot.Plot, l *plot.Legend) (plotArea, legendArea draw.Canvas) {
	lw := l.Rectangle(f.dc).Size().X
	return f.split(p, lw)
}

// layoutNames is layout for a legend whose entries are not added yet.
func (f *figure) layoutNames(p *plot.Plot, l *plot.Legend, names []string) (plotArea, legendArea draw.Canvas) {
	var lw vg.Length
	for _, n := range names {
		lw = max(lw, l.ThumbnailWidth+l.TextStyle.Width(" "+n))
	}
	return f.split(p, lw)
}

func (f *figure) split(p *plot.Plot, legendW vg.Length) (plotArea, legendArea draw.Canvas) {
	inner := draw.Crop(f.dc, figMargin, -figMargin, figMargin, -figMargin)
	plotArea = draw.Crop(inner, 0, -(legendW + legendGap), 0, 0)
	legendArea = inner
	legendArea.Min.X = inner.Max.X - legendW
	legendArea.Max.Y = p.DataCanvas(plotArea).Max.Y
	return plotArea, legendArea
}

// save writes the figure to its path. SVGs name Liberation Sans (fonts are
// not embedded), so generic fallbacks are added for viewers without it.
func (f *figure) save() error {
	data, err := f.encode()
	if err != nil {
		return err
	}
	return writeFile(f.path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// encode returns the figure's file, as save writes it.
func (f *figure) encode() ([]byte, error) {
	var buf bytes.Buffer
	if _, err := f.c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("reports: %s: %w", f.path, err)
	}
	data := buf.Bytes()
	if f.svg {
		data = bytes.ReplaceAll(data, []byte("font-family:Liberation Sans;"),
			[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
	}
	return data, nil
}

// writeFile writes path atomically with write (outdir.WriteFile); errors
// name the path.
func writeFile(path string, write func(io.Writer) error) error {
	if err := outdir.WriteFile(path, write); err != nil {
		return fmt.Errorf("plots: %s: %w", path, err)
	}
	return nil
}
