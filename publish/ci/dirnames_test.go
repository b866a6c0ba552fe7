package ci

import (
	"slices"
	"strings"
	"testing"
)

// DirNames makes every name one path element inside the results
// directory, and different names different directories.
func TestDirNames(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
	}{
		{"plain names stay", []string{"sliding-log", "my limiter"}, []string{"sliding-log", "my limiter"}},
		{"separators and control characters", []string{"a/b\\c:d\te\nf\x7fg"}, []string{"a_b_c_d_e_f_g"}},
		{"the parent", []string{".."}, []string{"__"}},
		{"the directory itself and empty", []string{".", ""}, []string{"_", "_-2"}},
		{"a path up", []string{"../../etc"}, []string{"_._.._etc"}},
		{"hidden, or ratelab's own temporary files", []string{".ratelab-lock", ".x"}, []string{"_ratelab-lock", "_x"}},
		{"one name made twice is numbered", []string{"a/b", "a_b", "a:b"}, []string{"a_b", "a_b-2", "a_b-3"}},
		{"numbering skips a name taken", []string{"a_b-2", "a/b", "a_b"}, []string{"a_b-2", "a_b", "a_b-3"}},
		{"case-insensitive file systems", []string{"Limiter", "limiter"}, []string{"Limiter", "limiter-2"}},
		{"invisible format characters", []string{"a\u202eb\u200bc"}, []string{"a_b_c"}},
		{"cut to 120 bytes on a rune boundary", []string{long}, []string{strings.Repeat("é", 60)}},
		{"invalid UTF-8", []string{"a\xffb"}, []string{"a_b"}},
	} {
		got := DirNames(tc.names)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: DirNames(%q): got %q, want %q", tc.name, tc.names, got, tc.want)
		}
		for _, d := range got {
			if d == "" || d == "." || d == ".." || strings.ContainsAny(d, "/\\:\x00") {
				t.Errorf("%s: %q is not one path element", tc.name, d)
			}
		}
	}
}
