package plots

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/reports/reportstest"
)

var svgPath = regexp.MustCompile(`<path d="([^"]*)" style="([^"]*)"`)

// The SVG of the window, drawn: one dashed limit line per panel (and the
// legend's), red only where fixed-window went above L, the window that
// holds the most shaded in each panel, titles naming the figures.
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
	for _, m := range svgPath.FindAllStringSubmatch(string(svg), -1) {
		d, style := m[1], m[2]
		switch {
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
		"limit L = 50", "accepted above L", "the window with the most", "(s)"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the SVG lacks %q", want)
		}
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
