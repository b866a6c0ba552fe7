package live

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		line  string
		width int
		want  string
	}{
		{"abcdef", 4, "abcd\x1b[0m"},
		{"abc", 4, "abc"},
		// escapes take no column; runes take one each
		{"\x1b[1mab\x1b[0m██c", 4, "\x1b[1mab\x1b[0m██\x1b[0m"},
		{"abcdef", 0, "abcdef"},
	} {
		if got := truncate(tc.line, tc.width); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.line, tc.width, got, tc.want)
		}
	}
}

func TestJoinFitting(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		width int
		want  []string
	}{
		{[]string{"ab", "cd", "ef"}, 20, []string{"ab · cd · ef"}},
		// a new line between parts, never inside one; escapes take no column
		{[]string{"\x1b[1mab\x1b[0m", "cd", "ef"}, 7, []string{"\x1b[1mab\x1b[0m · cd", "ef"}},
		{[]string{"abcdefgh", "ij"}, 4, []string{"abcdefgh", "ij"}},
		{[]string{"ab", "cd"}, 0, []string{"ab · cd"}},
	} {
		got := joinFitting(tc.parts, " · ", tc.width)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("joinFitting(%q, %d) = %q, want %q", tc.parts, tc.width, got, tc.want)
		}
	}
}

// A page is shown only once asked for; q or the end of the input stops
// the paging; every line fits the width.
func TestPageExplained(t *testing.T) {
	pages := [][]string{{"opening words", "first algorithm"}, {"second algorithm"}, {"third algorithm"}}
	names := []string{"a", "b", "c"}
	for _, tc := range []struct {
		input     string
		shown     []string
		notShown  []string
		lastAsked string
	}{
		{"\n\n\n", []string{"opening words", "first algorithm", "second algorithm", "third algorithm"}, nil, "3/3: c"},
		{"\nq\n", []string{"opening words", "first algorithm"}, []string{"second algorithm"}, "2/3: b"},
		{"\n", []string{"first algorithm"}, []string{"second algorithm"}, "2/3: b"}, // end of input
		{"", nil, []string{"opening words"}, "1/3: a"},
	} {
		var b strings.Builder
		if err := PageExplained(&b, strings.NewReader(tc.input), pages, names, 40); err != nil {
			t.Fatalf("input %q: %v", tc.input, err)
		}
		out := b.String()
		for _, s := range tc.shown {
			if !strings.Contains(out, s) {
				t.Errorf("input %q: %q not shown:\n%s", tc.input, s, out)
			}
		}
		for _, s := range tc.notShown {
			if strings.Contains(out, s) {
				t.Errorf("input %q: %q shown:\n%s", tc.input, s, out)
			}
		}
		if i := strings.LastIndex(out, "[Enter: "); i < 0 || !strings.Contains(out[i:], tc.lastAsked) {
			t.Errorf("input %q: the last prompt does not ask for %q:\n%s", tc.input, tc.lastAsked, out)
		}
		// on a terminal the reader's Enter ends the prompt's line
		for _, line := range strings.Split(strings.ReplaceAll(out, "stop] ", "stop]\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > 40 {
				t.Errorf("input %q: a line of %d runes, width 40: %q", tc.input, n, line)
			}
		}
	}
}
