package plots

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/reportstest"
)

var plotsDir = flag.String("plots", "", "also write the fixture's run directory (plots, report.md) here, to look at")

func TestPlots(t *testing.T) {
	dir := t.TempDir()
	r := reportstest.Run()
	for _, ext := range []string{".png", ".svg"} {
		for _, sc := range r.Config.Scenarios {
			path := filepath.Join(dir, "timeline-"+sc+ext)
			if err := PlotTimeline(r, sc, path); err != nil {
				t.Fatalf("PlotTimeline(%s): %v", sc, err)
			}
			reportstest.CheckImage(t, path)
		}
		path := filepath.Join(dir, "ratio"+ext)
		if err := PlotRatio(r, path); err != nil {
			t.Fatalf("PlotRatio: %v", err)
		}
		reportstest.CheckImage(t, path)
	}

	// Errors name the file and say what is wrong.
	if err := PlotTimeline(r, "no-such-scenario", filepath.Join(dir, "x.png")); err == nil || !strings.Contains(err.Error(), "no-such-scenario") {
		t.Errorf("unknown scenario: got %v", err)
	}
	if err := PlotRatio(r, filepath.Join(dir, "ratio.gif")); err == nil || !strings.Contains(err.Error(), "ratio.gif") {
		t.Errorf(".gif: got %v", err)
	}
	if err := PlotRatio(&measure.Results{}, filepath.Join(dir, "empty.png")); err == nil {
		t.Errorf("no rows: got no error")
	}
}

// NaN and Inf must never reach gonum/plot, which refuses them.
func TestPlotsNonFinite(t *testing.T) {
	r := reportstest.Run()
	r.Results[0].Ratio = math.NaN()
	r.Results[1].Ratio = math.Inf(1)
	r.Results[2].Timeline[3].TMS = math.NaN()
	r.Results[3].Timeline[0].TMS = math.Inf(-1)
	r.Results = r.Results[:len(r.Results)-1] // reservoir did not run steady
	dir := t.TempDir()
	if *plotsDir != "" {
		dir = filepath.Join(*plotsDir, "nonfinite")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := PlotRatio(r, filepath.Join(dir, "ratio"+ext)); err != nil {
			t.Errorf("PlotRatio with NaN/Inf ratios: %v", err)
		}
		if err := PlotTimeline(r, "boundary-burst", filepath.Join(dir, "timeline"+ext)); err != nil {
			t.Errorf("PlotTimeline with NaN/Inf times: %v", err)
		}
	}
	var b bytes.Buffer
	if err := reports.Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "n/a") || !strings.Contains(b.String(), "inf") {
		t.Errorf("table should show NaN as n/a and Inf as inf:\n%s", b.String())
	}
	// A timeline of only non-finite times is an error, not a panic.
	r.Results[0].Timeline = []measure.Point{{TMS: math.NaN(), Accepted: 1}}
	r.Results = r.Results[:1]
	if err := PlotTimeline(r, "boundary-burst", filepath.Join(dir, "t.png")); err == nil {
		t.Errorf("all-NaN timeline: got no error")
	}
}
