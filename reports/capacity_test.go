package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

func TestCapacityGolden(t *testing.T) {
	incomplete := reportstest.Capacity()
	incomplete.Complete, incomplete.Error = false, "sliding-log at limit 10000: context canceled"
	incomplete.Results = incomplete.Results[:2]
	incomplete.Trim = nil
	incomplete.Warnings = []string{"1 replica(s) attached: the replication backlog may grow with the fills"}
	for _, tc := range []struct {
		format, golden string
		r              *measure.CapacityResults
	}{
		{"table", "capacity-table.golden", reportstest.Capacity()},
		{"wide", "capacity-table-wide.golden", reportstest.Capacity()},
		{"markdown", "capacity-markdown.golden", reportstest.Capacity()},
		{"csv", "capacity-csv.golden", reportstest.Capacity()},
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
	if err := WriteCapacity(&bytes.Buffer{}, "xml", reportstest.Capacity()); err == nil || !strings.HasPrefix(err.Error(), "format: ") {
		t.Errorf("unknown format: %v", err)
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
