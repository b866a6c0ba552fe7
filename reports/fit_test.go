package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every default text table, with its notes, fits TableWidth: each line of
// the table goldens (not the -wide ones, nor Markdown, CSV or JSON, which
// are documents, not terminal output).
func TestTableGoldensFit(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	checked := 0
	for _, f := range files {
		name := filepath.Base(f)
		if !(strings.Contains(name, "table") || strings.HasPrefix(name, "verify-")) || strings.Contains(name, "wide") {
			continue
		}
		checked++
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if n := utf8.RuneCountInString(line); n > TableWidth {
				t.Errorf("%s:%d: %d columns, want <= %d: %s", name, i+1, n, TableWidth, line)
			}
		}
	}
	if checked < 8 {
		t.Errorf("%d table goldens checked: the names changed?", checked)
	}
}

func TestFitTableDropsInOrder(t *testing.T) {
	cols := []column{{"name", false, 0, ""}, {"aaaaaaaaaa", true, 1, ""}, {"bbbbbbbbbb", true, 2, ""}, {"cccccccccc", true, 0, ""}}
	rows := [][]string{{"x", "1", "2", "3"}}
	for _, tc := range []struct {
		width   int
		dropped string
	}{{0, ""}, {60, ""}, {40, "bbbbbbbbbb"}, {30, "bbbbbbbbbb aaaaaaaaaa"}, {5, "bbbbbbbbbb aaaaaaaaaa"}} {
		out, dropped, err := fitTable(cols, rows, tc.width)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(dropped, " "); got != tc.dropped {
			t.Errorf("width %d: dropped %q, want %q", tc.width, got, tc.dropped)
		}
		if tc.width >= 30 && maxLineWidth(out) > tc.width {
			t.Errorf("width %d: %d columns:\n%s", tc.width, maxLineWidth(out), out)
		}
	}
}

func TestWrapText(t *testing.T) {
	got := wrapText("aaa bbb ccc ddd", 7, 2)
	if want := "aaa bbb\n  ccc\n  ddd"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := wrapText("short", 0, 2); got != "short" {
		t.Errorf("width 0: %q", got)
	}
}
