package publish

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/plots"
	"github.com/ratelab/ratelab/reports/reportstest"
)

func TestBenchDir(t *testing.T) {
	dir := t.TempDir()
	r := reportstest.Bench()
	if err := WriteBenchDir(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"latency-allow.png", "latency-allow.svg", "latency-deny.png", "throughput.png", "throughput.svg"} {
		reportstest.CheckImage(t, filepath.Join(dir, f))
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "ratelab bench report") {
		t.Errorf("report.html: %v, inlined SVG %v", err, strings.Contains(string(page), "<svg"))
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# ratelab bench report", "## Runs", "| redis-benchmark |", "![throughput](throughput.png)"} {
		if !bytes.Contains(report, []byte(want)) {
			t.Errorf("report.md has no %q", want)
		}
	}
	back, err := measure.ReadBench(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("results.json does not read back as written")
	}
	if err := plots.PlotLatencyCDF(r, "sideways", filepath.Join(dir, "x.png")); err == nil || !strings.Contains(err.Error(), "sideways") {
		t.Errorf("unknown path: %v", err)
	}
	if err := plots.PlotThroughput(&measure.BenchResults{}, filepath.Join(dir, "y.png")); err == nil {
		t.Error("no rows: no error")
	}
}
