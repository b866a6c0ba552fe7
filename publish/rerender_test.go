package publish

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratelab/ratelab/reports"
)

// Rerender refuses what is not a directory, naming it, before it writes
// anything.
func TestRerenderNotADirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "results.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{
		{"missing", filepath.Join(dir, "nope")},
		{"a file", file},
	} {
		var out bytes.Buffer
		err := Rerender(&out, tc.path, reports.Table)
		if want := "report: " + tc.path + " is not a directory"; err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", tc.name, err, want)
		}
		if out.Len() > 0 {
			t.Errorf("%s: wrote %q", tc.name, out.String())
		}
	}
}
