package live

import "testing"

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
