package publish

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// The capacity directory: results.json reads back as written, the plot is
// drawn, report.md links it, and `ratelab report` can tell the kind.
func TestCapacityDir(t *testing.T) {
	dir := t.TempDir()
	r := reportstest.Capacity()
	if err := WriteCapacityDir(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"memory.png", "memory.svg"} {
		reportstest.CheckImage(t, filepath.Join(dir, f))
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "ratelab capacity report") {
		t.Errorf("report.html: %v, inlined SVG %v", err, strings.Contains(string(page), "<svg"))
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# ratelab capacity report", "![memory](memory.png)", "| sliding-log", "stay skiplist"} {
		if !bytes.Contains(report, []byte(want)) {
			t.Errorf("report.md has no %q", want)
		}
	}
	path := filepath.Join(dir, "results.json")
	if cmd, err := measure.ResultsCommand(path); err != nil || cmd != "capacity" {
		t.Errorf("ResultsCommand: %q %v", cmd, err)
	}
	back, err := measure.ReadCapacity(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("results.json does not read back as written:\n%+v\n%+v", back, r)
	}
	if _, err := measure.ReadBench(path); err == nil || !strings.Contains(err.Error(), "ratelab capacity") {
		t.Errorf("ReadBench of a capacity file: %v", err)
	}
}
