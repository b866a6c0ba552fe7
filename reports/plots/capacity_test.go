package plots

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

func TestPlotCapacityErrors(t *testing.T) {
	dir := t.TempDir()
	if err := PlotCapacity(&measure.CapacityResults{}, filepath.Join(dir, "a.png")); err == nil {
		t.Error("no rows: no error")
	}
	r := reportstest.Capacity()
	for i := range r.Results {
		r.Results[i].MemoryBytes = 0
	}
	if err := PlotCapacity(r, filepath.Join(dir, "b.png")); err == nil {
		t.Error("no memory figures: no error")
	}
	if err := PlotCapacity(reportstest.Capacity(), filepath.Join(dir, "c.gif")); err == nil || !strings.Contains(err.Error(), "c.gif") {
		t.Errorf(".gif: %v", err)
	}
}

func TestLogTicks(t *testing.T) {
	ticks := logTicks{format: formatDecimalBytes}.Ticks(65, 2e6)
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
		if tk.Value < 65 || tk.Value > 2e6 {
			t.Errorf("tick %v outside the range", tk.Value)
		}
	}
	if want := []string{"100 B", "1 kB", "10 kB", "100 kB", "1 MB"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	if got := (logTicks{format: formatDecimalBytes}).Ticks(0, 10); got != nil {
		t.Errorf("non-positive range: %v", got)
	}
	if got := (logTicks{format: formatDecimalBytes}).Ticks(10, math.Inf(1)); got != nil {
		t.Errorf("infinite range: %v", got)
	}
}
