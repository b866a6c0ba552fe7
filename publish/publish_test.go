package publish

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// Publish writes the directory and stdout, says where on stderr, and turns
// a run that stopped early into an error naming the command; a directory
// that cannot be written is the error, naming it; after Ctrl-C (ctx ended)
// results.json is written alone and stderr says so.
func TestPublish(t *testing.T) {
	print := func(w io.Writer) error { _, err := io.WriteString(w, "table\n"); return err }
	tmp := t.TempDir()
	blocker := filepath.Join(tmp, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	live := context.Background()
	ended, cancel := context.WithCancel(live)
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		out     string
		runErr  error
		wantErr string
		wantOut string
		files   []string // in out, after
		stderr  string
	}{
		{"complete", live, filepath.Join(tmp, "a"), nil, "", "table\n", []string{"results.json", "report.md", "report.html"}, "(results.json, report.md, report.html, plots)"},
		{"stopped early", live, filepath.Join(tmp, "b"), errors.New("Redis went away"), "run stopped early (results marked incomplete): Redis went away", "table\n", []string{"results.json"}, "results in"},
		{"interrupted", ended, filepath.Join(tmp, "c"), context.Canceled, "run stopped early (results marked incomplete): context canceled", "table\n", []string{"results.json"}, "(results.json only: interrupted; ratelab report"},
		{"directory fails", live, filepath.Join(blocker, "d"), nil, "write results to " + filepath.Join(blocker, "d") + ": ", "", nil, ""},
	} {
		var stdout, stderr bytes.Buffer
		err := Publish(tc.ctx, &stdout, &stderr, "run", tc.out, &measure.Results{}, 1500, tc.runErr, print)
		if got := reportstest.ErrString(err); !strings.HasPrefix(got, tc.wantErr) || (tc.wantErr == "") != (got == "") || stdout.String() != tc.wantOut {
			t.Errorf("%s: got %q, stdout %q; want %q, %q", tc.name, got, stdout.String(), tc.wantErr, tc.wantOut)
		}
		if !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%s: stderr %q does not say %q", tc.name, stderr.String(), tc.stderr)
		}
		for _, f := range tc.files {
			if _, err := os.Stat(filepath.Join(tc.out, f)); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
		if tc.name == "interrupted" {
			if _, err := os.Stat(filepath.Join(tc.out, "report.html")); err == nil {
				t.Errorf("interrupted: report.html written after Ctrl-C")
			}
		}
	}
}
