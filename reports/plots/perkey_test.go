package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// Scenario runs show no per-key table.
func TestNoPerKeyForScenarios(t *testing.T) {
	r := reportstest.Six()
	var b bytes.Buffer
	if err := reports.Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "per key") {
		t.Error("a scenario run shows a per-key table")
	}
	for i := range r.Results {
		r.Results[i].Trailing = nil
	}
	if err := PlotTrailing(r, r.Results[0].Scenario, filepath.Join(t.TempDir(), "x.png")); err == nil {
		t.Error("PlotTrailing of rows without a series: no error")
	}
}

func TestPlotTrailing(t *testing.T) {
	dir := t.TempDir()
	for _, ext := range []string{".png", ".svg"} {
		path := filepath.Join(dir, "trailing"+ext)
		if err := PlotTrailing(reportstest.Replay(), "traffic", path); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() < 5000 {
			t.Fatalf("%s: %v", path, err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "trailing.svg"))
	for _, want := range []string{"fixed-window", "1 of 3 keys over the limit", "limit L = 100 per key", "time t from the anchor (h); t = 0 is the aligned window boundary"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}
