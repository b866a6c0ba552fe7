package reports

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// TableWidth is the most columns (runes) a line of a default text table
// and of its notes takes; Wide lifts it.
const TableWidth = 100

// Wide is Table with every column, however wide the lines (--wide). It is
// accepted wherever Table is, and not listed in Formats.
const Wide Format = "wide"

// column is one column of a fitted table: its header, whether its cells
// are numbers (right-aligned), and when it is dropped to fit: 0 never,
// otherwise the highest drop goes first.
type column struct {
	head  string
	right bool
	drop  int
	unit  string // said after head ("accepted req"), unless the table is too narrow for it
}

// title is c's header with its unit, bare: without it.
func (c column) title(bare bool) string {
	if c.unit == "" || bare {
		return c.head
	}
	return c.head + " " + c.unit
}

// fitTable renders an ASCII table of cols and rows (one cell per column)
// that fits width runes per line, by leaving out the droppable columns, the
// highest drop first, until it fits (width <= 0: none is left out), and
// then by leaving the units out of the headers ("units in the headers" is
// then among the left out). It returns the table and the headers left out.
func fitTable(cols []column, rows [][]string, width int) (string, []string, error) {
	keep := make([]bool, len(cols))
	for i := range keep {
		keep[i] = true
	}
	var dropped []string
	bare := false
	for {
		var header []any
		var align []tw.Align
		var cells [][]string
		for i, c := range cols {
			if !keep[i] {
				continue
			}
			header = append(header, c.title(bare))
			a := tw.AlignLeft
			if c.right {
				a = tw.AlignRight
			}
			align = append(align, a)
		}
		for _, row := range rows {
			var out []string
			for i := range cols {
				if keep[i] {
					out = append(out, row[i])
				}
			}
			cells = append(cells, out)
		}
		var b strings.Builder
		rend := renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
		if err := renderAny(&b, rend, header, align, cells); err != nil {
			return "", nil, err
		}
		if width <= 0 || maxLineWidth(b.String()) <= width {
			return b.String(), dropped, nil
		}
		next := -1
		for i, c := range cols {
			if keep[i] && c.drop > 0 && (next < 0 || c.drop > cols[next].drop) {
				next = i
			}
		}
		if next < 0 && !bare && slices.ContainsFunc(cols, func(c column) bool { return c.unit != "" }) {
			bare = true
			dropped = append(dropped, "units in the headers")
			continue
		}
		if next < 0 { // nothing left to drop: as narrow as it gets
			return b.String(), dropped, nil
		}
		keep[next] = false
		dropped = append(dropped, cols[next].title(false))
	}
}

// droppedNote tells which columns a fitted table left out, "" when none.
func droppedNote(dropped []string) string {
	if len(dropped) == 0 {
		return ""
	}
	return fmt.Sprintf("(--wide adds %s)", strings.Join(dropped, ", "))
}

// maxLineWidth is the widest line of s, in runes.
func maxLineWidth(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		n = max(n, utf8.RuneCountInString(line))
	}
	return n
}

// wrapText breaks s at spaces into lines of at most width runes, the
// lines after the first indented by indent spaces (width <= 0: s as it
// is). A word longer than a line stays whole.
func wrapText(s string, width, indent int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	var b strings.Builder
	col := 0
	for _, word := range strings.Fields(s) {
		n := utf8.RuneCountInString(word)
		switch {
		case col == 0:
		case col+1+n > width:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}
