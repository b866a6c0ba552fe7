package publish

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// `report DIR` with a symlink planted in DIR replaces the
// link with its own file and never writes through it: the file outside DIR
// keeps its bytes.
func TestRerenderNeverWritesThroughSymlinks(t *testing.T) {
	testenv.SkipUnderRace(t)
	dir := t.TempDir()
	if err := WriteDir(dir, reportstest.Run()); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(outside, []byte("the user's"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.md", "report.html", "ratio.png", "ratio.svg"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := Rerender(io.Discard, dir, reports.Table); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "the user's" {
		t.Errorf("the file behind the planted symlink was written: %q", b)
	}
	for _, name := range []string{"report.md", "report.html", "ratio.png", "ratio.svg"} {
		if st, err := os.Lstat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want ratelab's own regular file", name, st.Mode(), err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".ratelab-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// escapes planted in a results.json (a forged or
// downloaded one) never reach the terminal through `report DIR`.
func TestRerenderCleansForgedResults(t *testing.T) {
	testenv.SkipUnderRace(t)
	dir := t.TempDir()
	r := reportstest.Run()
	r.Results[0].Algorithm = "\x1b]0;owned\x07\x1b[2Jfixed-window"
	r.Results[0].Scenario = "steady\x1b[31m"
	r.Config.Prefix = "\u009b2J"
	if err := WriteDir(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []reports.Format{reports.Table, reports.Markdown, reports.CSV, reports.JSON} {
		var b strings.Builder
		if err := Rerender(&b, dir, f); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07\u009b") {
			t.Errorf("%s: a control character reached the output: %q", f, b.String())
		}
		if !strings.Contains(b.String(), `\u001b]0;owned`) {
			t.Errorf("%s: the forged name is not shown escaped: %q", f, b.String())
		}
	}
}
