package reports

import (
	"strings"
	"testing"
)

// A column whose every row is empty is left out of the page, its header
// and right-alignment with it; a table without rows keeps its header.
func TestDropEmptyColumns(t *testing.T) {
	tab := HTMLTable{Header: []string{"at", "answered", "key"}, Right: []bool{true, true, false},
		Rows: []HTMLRow{{Cells: []string{"+1 µs", "", "user"}}, {Cells: []string{"+2 µs", " ", "user"}, Over: true}}}
	got := dropEmptyColumns(tab)
	if strings.Join(got.Header, ",") != "at,key" || len(got.Right) != 2 || !got.Right[0] || got.Right[1] {
		t.Errorf("header %v, right %v; want at,key and [true false]", got.Header, got.Right)
	}
	if len(got.Rows) != 2 || strings.Join(got.Rows[1].Cells, ",") != "+2 µs,user" || !got.Rows[1].Over {
		t.Errorf("rows %+v", got.Rows)
	}
	if empty := dropEmptyColumns(HTMLTable{Header: []string{"a", "b"}}); len(empty.Header) != 2 {
		t.Errorf("a table without rows lost its header: %v", empty.Header)
	}
	var b strings.Builder
	if err := WriteHTMLDoc(&b, HTMLDoc{Title: "t", Tables: []HTMLTable{tab}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<th>answered</th>") {
		t.Error("the page shows the empty column")
	}
}
