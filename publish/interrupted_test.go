package publish

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// a command stopped by Ctrl-C writes results.json alone
// (brief), the same bytes the full directory holds; `report DIR` draws the
// rest from it later.
func TestWriteResultsDirBrief(t *testing.T) {
	for _, c := range []struct {
		name string
		r    any
		// more is a file the full directory has beside results.json
		more string
	}{
		{"run", reportstest.Incomplete(), "ratio.png"},
		{"replay", reportstest.Replay(), "report.html"},
		{"capacity", reportstest.Capacity(), "report.md"},
		{"bench", reportstest.Bench(), "report.md"},
	} {
		t.Run(c.name, func(t *testing.T) {
			full, brief := t.TempDir(), filepath.Join(t.TempDir(), "new")
			if err := WriteResultsDir(full, c.r, false); err != nil {
				t.Fatal(err)
			}
			if err := WriteResultsDir(brief, c.r, true); err != nil {
				t.Fatal(err)
			}
			if names := reportstest.DirNames(t, brief); !slices.Equal(names, []string{"results.json"}) {
				t.Errorf("brief: %v, want results.json alone", names)
			}
			if names := reportstest.DirNames(t, full); !slices.Contains(names, c.more) {
				t.Errorf("full: %v, no %s", names, c.more)
			}
			a, _ := os.ReadFile(filepath.Join(full, "results.json"))
			b, _ := os.ReadFile(filepath.Join(brief, "results.json"))
			if !bytes.Equal(a, b) {
				t.Errorf("results.json differs: brief %d B, full %d B", len(b), len(a))
			}
			if err := Rerender(io.Discard, brief, reports.Table); err != nil {
				t.Fatal(err)
			}
			if names := reportstest.DirNames(t, brief); !slices.Contains(names, c.more) {
				t.Errorf("after Rerender: %v, no %s", names, c.more)
			}
		})
	}
	for _, r := range []any{nil, (*measure.Results)(nil), (*measure.BenchResults)(nil), &measure.VerifyReport{}} {
		if err := WriteResultsDir(t.TempDir(), r, true); err == nil {
			t.Errorf("%T: no error", r)
		}
	}
}
