package plots

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/reports/reportstest"
)

var svgPath = regexp.MustCompile(`<path d="([^"]*)" style="([^"]*)"`)

// The SVG of the window, drawn: one dashed limit line per panel (and the
// legend's), red only where fixed-window went above L, the window that
// holds the most shaded in each panel at its whole width W (half the
// distance between the boundaries at -W and +W, which are drawn dotted,
// the anchor solid), titles naming the figures, and the sentence under
// fixed-window's panel that says why it broke.
func TestPlotTrailingRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trailing.svg")
	if err := PlotTrailing(reportstest.BurstRun(), "boundary-burst", path); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var limitLines, red, band int
	var bandWidths []float64
	boundaryX := map[string]int{} // x of each vertical dotted line: its count (one per panel)
	xs := func(d string) (lo, hi float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, p := range regexp.MustCompile(`[ML]([-0-9.]+),([-0-9.]+)`).FindAllStringSubmatch(d, -1) {
			x, _ := strconv.ParseFloat(p[1], 64)
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		return lo, hi
	}
	for _, m := range svgPath.FindAllStringSubmatch(string(svg), -1) {
		d, style := m[1], m[2]
		switch {
		case strings.Contains(style, "stroke-dasharray:2,2") && strings.Contains(style, "stroke:#707070"):
			if lo, hi := xs(d); lo == hi {
				boundaryX[strconv.FormatFloat(lo, 'f', 1, 64)]++
			}
		case strings.Contains(style, "stroke-dasharray:5,3") && strings.Contains(style, "stroke:#000000"):
			// horizontal: M x0,y L x1,y
			pts := regexp.MustCompile(`[ML]([-0-9.]+),([-0-9.]+)`).FindAllStringSubmatch(d, -1)
			if len(pts) == 2 && pts[0][2] == pts[1][2] {
				limitLines++
			}
		case strings.Contains(style, "fill:#CF0F0F"):
			red++
		case strings.Contains(style, "fill:#7F7F7F"):
			band++
			lo, hi := xs(d)
			bandWidths = append(bandWidths, hi-lo)
		}
	}
	// the boundaries at -10s and +10s in both panels (the anchor apart)
	var bx []float64
	for x, n := range boundaryX {
		if n == 2 {
			v, _ := strconv.ParseFloat(x, 64)
			bx = append(bx, v)
		}
	}
	if len(bx) != 2 {
		t.Fatalf("vertical dotted boundary lines at %v (x: panels), want two x's in both panels", boundaryX)
	}
	w := math.Abs(bx[1]-bx[0]) / 2                      // W on the page
	for i, bw := range bandWidths[:len(bandWidths)-1] { // the legend's sample apart
		if math.Abs(bw-w) > 1 {
			t.Errorf("panel %d: the worst window is %.1f wide, want W = %.1f (cut by the axis?)", i, bw, w)
		}
	}
	// two panels plus the legend's sample
	if limitLines != 3 {
		t.Errorf("%d horizontal dashed limit lines, want 3 (two panels, the legend)", limitLines)
	}
	if red != 2 {
		t.Errorf("%d red areas, want 2 (fixed-window's excess, the legend's sample); sliding-log stays at L", red)
	}
	if band != 3 {
		t.Errorf("%d shaded windows, want 3 (one per panel, the legend's sample)", band)
	}
	for _, want := range []string{"boundary-burst: accepted within the trailing window (t-W, t], W = 10s, limit L = 50",
		"fixed-window: at most 100 in one window, 2.00x L", "sliding-log: at most 50 in one window, 1.00x L",
		"L = 50", "above L", "worst window (width W)", "anchor", "boundaries (every W)",
		"time t from the anchor (s); t = 0 is the aligned window boundary the scenario aims at",
		"fixed-window: counter reset at the boundary at +0s: 50 before + 50 after"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if strings.Contains(string(svg), "sliding-log: counter reset") {
		t.Error("a sentence under sliding-log's panel, which held")
	}
	if strings.Contains(string(svg), "fill:#-") {
		t.Error("the SVG has a malformed colour")
	}
}

func TestTimeUnit(t *testing.T) {
	for _, tc := range []struct {
		spanMS float64
		unit   string
	}{{150, "ms"}, {1999, "ms"}, {2000, "s"}, {179e3, "s"}, {180e3, "min"}, {3 * 3600e3, "h"}, {48 * 3600e3, "h"}} {
		if u, _ := timeUnit(tc.spanMS); u != tc.unit {
			t.Errorf("span %gms: unit %s, want %s", tc.spanMS, u, tc.unit)
		}
	}
}
