package reports

import (
	"bytes"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

func TestBenchGolden(t *testing.T) {
	uncompared := reportstest.Bench()
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
		{"table", "bench-table.golden", reportstest.Bench()},
		{"wide", "bench-table-wide.golden", reportstest.Bench()},
		{"markdown", "bench-markdown.golden", reportstest.Bench()},
		{"csv", "bench-csv.golden", reportstest.Bench()},
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
