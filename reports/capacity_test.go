package reports

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/measure"
)

// capacityFixture is a capacity run with numbers as measured on Redis 7.0:
// the sorted set's listpack -> skiplist change between 128 and 129 entries.
func capacityFixture() *measure.CapacityResults {
	row := func(alg string, limit int64, keys int, enc string, entries, mu int64, overhead, delta float64) measure.CapacityRow {
		r := measure.CapacityRow{
			Algorithm: alg, Limit: limit, WindowMS: 3600000, LimitDesc: "per 1h", Keys: keys, KeysWanted: 10000,
			Calls: int64(keys) * entries, KeyNameBytes: 45, Type: "zset", Encoding: enc, Entries: entries, MemoryBytes: mu,
			BytesPerEntry: float64(mu) / float64(entries), TTLOverheadBytes: overhead, MemoryWithTTLBytes: float64(mu) + overhead,
			UsedMemoryDeltaBytes: delta, ActiveKeys: 1_000_000, ProjectedBytes: int64(delta * 1e6), FillMS: 1200,
		}
		r.Agreement = r.MemoryWithTTLBytes / delta
		return r
	}
	return &measure.CapacityResults{
		Header: measure.Header{Tool: "ratelab", Command: "capacity",
			Redis:     measure.RedisInfo{Mode: "exec", Addr: "127.0.0.1:40123", Version: "7.0.15"},
			StartedAt: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), DurationMS: 21500, Complete: true},
		Config: measure.CapacityRunConfig{
			Algorithms: []string{"sliding-log", "fixed-window"}, Limits: []int64{10, 128, 129, 10000},
			Keys: 10000, ActiveKeys: 1_000_000, WindowMS: 3600000, Budget: 100000, Prefix: "ratelab:t1:",
		},
		Server: measure.CapacityServerInfo{ZsetMaxListpackEntries: 128, HashMaxListpackEntries: 512},
		Results: []measure.CapacityRow{
			row("sliding-log", 10, 10000, "listpack", 10, 536, 66, 602),
			row("sliding-log", 128, 781, "listpack", 128, 6203, 56, 6264),
			row("sliding-log", 129, 775, "skiplist", 129, 18006, 56, 19107),
			row("sliding-log", 10000, 10, "skiplist", 10000, 1290950, 56, 1371018),
			row("fixed-window", 10, 10000, "int", 1, 104, 66, 154),
			row("fixed-window", 10000, 10000, "int", 1, 104, 66, 170),
		},
		Trim: &measure.TrimResult{Algorithm: "sliding-log", Keys: 20, FilledEntries: 200, Entries: 51,
			Encoding: "skiplist", MemoryBytes: 8435, FreshEncoding: "listpack", FreshMemoryBytes: 2136},
	}
}

func TestCapacityGolden(t *testing.T) {
	incomplete := capacityFixture()
	incomplete.Complete, incomplete.Error = false, "sliding-log at limit 10000: context canceled"
	incomplete.Results = incomplete.Results[:2]
	incomplete.Trim = nil
	incomplete.Warnings = []string{"1 replica(s) attached: the replication backlog may grow with the fills"}
	for _, tc := range []struct {
		format, golden string
		r              *measure.CapacityResults
	}{
		{"table", "capacity-table.golden", capacityFixture()},
		{"wide", "capacity-table-wide.golden", capacityFixture()},
		{"markdown", "capacity-markdown.golden", capacityFixture()},
		{"csv", "capacity-csv.golden", capacityFixture()},
		// an incomplete run says so first, then shows what it has, and its warnings
		{"table", "capacity-table-incomplete.golden", incomplete},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, Format(tc.format), tc.r); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.golden, b.Bytes())
		})
	}
	if err := WriteCapacity(&bytes.Buffer{}, "xml", capacityFixture()); err == nil || !strings.HasPrefix(err.Error(), "format: ") {
		t.Errorf("unknown format: %v", err)
	}
}

// The capacity directory: results.json reads back as written, the plot is
// drawn, report.md links it, and `ratelab report` can tell the kind.
func TestCapacityDir(t *testing.T) {
	dir := t.TempDir()
	r := capacityFixture()
	if err := WriteCapacityDir(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"memory.png", "memory.svg"} {
		checkImage(t, filepath.Join(dir, f))
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

func TestPlotCapacityErrors(t *testing.T) {
	dir := t.TempDir()
	if err := PlotCapacity(&measure.CapacityResults{}, filepath.Join(dir, "a.png")); err == nil {
		t.Error("no rows: no error")
	}
	r := capacityFixture()
	for i := range r.Results {
		r.Results[i].MemoryBytes = 0
	}
	if err := PlotCapacity(r, filepath.Join(dir, "b.png")); err == nil {
		t.Error("no memory figures: no error")
	}
	if err := PlotCapacity(capacityFixture(), filepath.Join(dir, "c.gif")); err == nil || !strings.Contains(err.Error(), "c.gif") {
		t.Errorf(".gif: %v", err)
	}
}

func TestFormatCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{999, "999"}, {1000, "1k"}, {2500, "2.5k"}, {1_000_000, "1M"}, {5_000_000, "5M"}, {1_500_000_000, "1.5G"}} {
		if got := formatCount(c.n); got != c.want {
			t.Errorf("formatCount(%d) = %q, want %q", c.n, got, c.want)
		}
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
