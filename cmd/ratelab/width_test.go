package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ratelab/ratelab/reports"
)

// The default tables ratelab prints fit reports.TableWidth (100) columns:
// every line of the table goldens but the --wide one (Markdown, CSV and
// JSON are documents, not terminal output).
func TestGoldenTablesFit(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*-table.golden"))
	files = append(files, filepath.Join("testdata", "golden", "run-default.golden"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if n := utf8.RuneCountInString(line); n > reports.TableWidth {
				t.Errorf("%s:%d: %d columns, want <= %d: %s", filepath.Base(f), i+1, n, reports.TableWidth, line)
			}
		}
	}
	if len(files) < 4 {
		t.Errorf("%d goldens checked, want at least 4 (run-default, run-table, the verify tables)", len(files))
	}
}
