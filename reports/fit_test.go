package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ratelab/ratelab/measure"
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

// Units stay in the headers while the table fits; past the last droppable
// column they leave, and the note says so.
func TestFitTableUnits(t *testing.T) {
	cols := []column{{"name", false, 0, ""}, {"accepted", true, 0, "req"}, {"memory", true, 1, "B"}, {"p99", true, 0, "µs"}}
	rows := [][]string{{"x", "1", "2", "3"}}
	for _, tc := range []struct {
		width   int
		dropped string
		header  string
	}{
		{0, "", "| name | accepted req | memory B | p99 µs |"},
		{45, "", "| name | accepted req | memory B | p99 µs |"},
		{35, "memory B", "| name | accepted req | p99 µs |"},
		{25, "memory B, units in the headers", "| name | accepted | p99 |"},
	} {
		out, dropped, err := fitTable(cols, rows, tc.width)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(dropped, ", "); got != tc.dropped {
			t.Errorf("width %d: dropped %q, want %q", tc.width, got, tc.dropped)
		}
		if got := strings.Join(strings.Fields(strings.Split(out, "\n")[1]), " "); got != tc.header {
			t.Errorf("width %d: header %q, want %q", tc.width, got, tc.header)
		}
	}
}

// A scenario whose requests each cost 1 counts in req; any other, in cost units.
func TestCountUnit(t *testing.T) {
	for _, tc := range []struct {
		rows []measure.Row
		want string
	}{
		{[]measure.Row{{Requests: 100, Offered: 100}, {Requests: 50, Offered: 50}}, "req"},
		{[]measure.Row{{Requests: 100, Offered: 100}, {Requests: 50, Offered: 500}}, "units"},
		{nil, "req"},
	} {
		if got := countUnit(tc.rows); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.rows, got, tc.want)
		}
		if h := tableHeader(tc.rows); h[4] != "accepted "+tc.want || h[9] != "memory B" {
			t.Errorf("header %v", h)
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
