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

// benchFixture is a compared bench of sliding-log on both paths.
func benchFixture() *measure.BenchResults {
	cdf := func(scale int64) []measure.CDFPoint {
		return []measure.CDFPoint{{Quantile: 0, US: 200 * scale}, {Quantile: 0.5, US: 800 * scale}, {Quantile: 0.9, US: 1500 * scale},
			{Quantile: 0.99, US: 3000 * scale}, {Quantile: 0.999, US: 6000 * scale}, {Quantile: 1, US: 9000 * scale}}
	}
	row := func(path string, per, rb float64, allowed int64, scale int64) measure.BenchRow {
		return measure.BenchRow{
			Algorithm: "sliding-log", Path: path, Clients: 50, Pipeline: 1, Keys: 100000, Limit: 100, WindowMS: 60000,
			LimitDesc: "100 per 1m0s", Decisions: 300000, Allowed: allowed, Denied: 300000 - allowed,
			DecisionsPerS: per, P50US: 800 * scale, P99US: 3000 * scale, P999US: 6000 * scale, MaxUS: 9000 * scale,
			ServerUSPerCall: 14.25, ServerCPUPct: 97, ClientCPUPct: 38,
			RedisBenchmarkPerS: rb, RedisBenchmarkServerUSPerCall: 14.5, RedisBenchmarkServerCPUPct: 98, RedisBenchmarkClientCPUPct: 31,
			VsRedisBenchmark: per / rb,
			Runs: []measure.BenchRun{
				{Tool: "ratelab", Decisions: 100000, Seconds: 1.6, PerS: per, ServerUSPerCall: 14.2, ServerCPUPct: 97, ClientCPUPct: 38, P50US: 800, P99US: 3000},
				{Tool: "redis-benchmark", Decisions: 100000, Seconds: 1.5, PerS: rb, ServerUSPerCall: 14.5, ServerCPUPct: 98, ClientCPUPct: 31, P50US: 780, P99US: 2900},
			},
			CDF: cdf(scale),
		}
	}
	return &measure.BenchResults{
		Header: measure.Header{Tool: "ratelab", Command: "bench",
			Redis:     measure.RedisInfo{Mode: "exec", Addr: "127.0.0.1:40123", Version: "7.0.15"},
			StartedAt: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), DurationMS: 31000, Complete: true},
		Config: measure.BenchRunConfig{
			Algorithms: []string{"sliding-log"}, Paths: []string{"allow", "deny"}, Limit: 100, WindowMS: 60000,
			Clients: 50, Pipeline: 1, DurationMS: 3000, Keys: 100000, Rounds: 3, Procs: 1,
			CompareRedisBenchmark: true, RedisBenchmark: "redis-benchmark 7.0.15", Prefix: "ratelab:t2:",
		},
		Results: []measure.BenchRow{
			row("allow", 61234.5, 60100, 300000, 1),
			row("deny", 70500, 80100, 300, 2),
		},
	}
}

func TestBenchGolden(t *testing.T) {
	uncompared := benchFixture()
	uncompared.Config.CompareRedisBenchmark, uncompared.Config.Rounds, uncompared.Config.RatePerS = false, 1, 20000
	for i := range uncompared.Results {
		r := &uncompared.Results[i]
		r.RedisBenchmarkPerS, r.VsRedisBenchmark, r.Runs = 0, 0, r.Runs[:1]
		r.RatePerS, r.Corrected = 20000, true
	}
	for _, tc := range []struct {
		format, golden string
		r              *measure.BenchResults
	}{
		// deny is below 0.9x: a note says so
		{"table", "bench-table.golden", benchFixture()},
		{"wide", "bench-table-wide.golden", benchFixture()},
		{"markdown", "bench-markdown.golden", benchFixture()},
		{"csv", "bench-csv.golden", benchFixture()},
		// without redis-benchmark there are no comparison columns; a paced run says so
		{"table", "bench-table-uncompared.golden", uncompared},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, Format(tc.format), tc.r); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.golden, b.Bytes())
		})
	}
}

func TestBenchDir(t *testing.T) {
	dir := t.TempDir()
	r := benchFixture()
	if err := WriteBenchDir(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"latency-allow.png", "latency-allow.svg", "latency-deny.png", "throughput.png", "throughput.svg"} {
		checkImage(t, filepath.Join(dir, f))
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
	if err := PlotLatencyCDF(r, "sideways", filepath.Join(dir, "x.png")); err == nil || !strings.Contains(err.Error(), "sideways") {
		t.Errorf("unknown path: %v", err)
	}
	if err := PlotThroughput(&measure.BenchResults{}, filepath.Join(dir, "y.png")); err == nil {
		t.Error("no rows: no error")
	}
}

func TestNines(t *testing.T) {
	for _, c := range []struct{ q, want float64 }{{0, 0}, {0.9, 1}, {0.99, 2}, {0.999, 3}, {1, 5}} {
		if got := nines(c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("nines(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	var labels []string
	for _, tk := range (ninesTicks{}).Ticks(0, 5.2) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0%", "50%", "90%", "99%", "99.9%", "99.99%", "99.999%"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
}

func TestFormatMicrosAndSI(t *testing.T) {
	for _, c := range []struct {
		v          float64
		micro, rps string
	}{{10, "10 µs", "10"}, {1000, "1 ms", "1.0k"}, {61234, "61.234 ms", "61.2k"}, {1e6, "1 s", "1.00M"}} {
		if got := formatMicros(c.v); got != c.micro {
			t.Errorf("formatMicros(%v) = %q, want %q", c.v, got, c.micro)
		}
		if got := formatSI(c.v); got != c.rps {
			t.Errorf("formatSI(%v) = %q, want %q", c.v, got, c.rps)
		}
	}
}
