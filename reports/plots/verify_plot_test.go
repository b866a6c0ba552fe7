package plots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/reports/reportstest"
)

// The counter-example's SVG has the limit line, the excess in red, the
// window that broke shaded and the sentence that explains it.
func TestPlotCounterExampleSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ce.svg")
	if err := PlotCounterExample(reportstest.Verify(true), path); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(path)
	s := string(svg)
	for _, want := range []string{"fixed-window: counter-example (violated), family boundary", "limit L = 7",
		"14 accepted within 13µs", "the window that broke", "(µs)", "fill:#CF0F0F", "fill:#7F7F7F"} {
		if !strings.Contains(s, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if err := PlotCounterExample(reportstest.Verify(false), path); err == nil {
		t.Error("no counter-example: no error")
	}
}

// Families without a ratio are left out; one that broke the property is
// vermillion.
func TestPlotFamiliesSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fam.svg")
	if err := PlotFamilies(reportstest.Verify(true), path); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(path)
	s := string(svg)
	for _, want := range []string{">boundary<", ">overload<", "2.00  violated", "1.00  holds", "fill:#D55E00", "fill:#009E73"} {
		if !strings.Contains(s, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	for _, bad := range []string{">isolation<", ">weighted<"} {
		if strings.Contains(s, bad) {
			t.Errorf("the SVG has %q, a family without a ratio", bad)
		}
	}
}
