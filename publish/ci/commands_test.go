package ci

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
)

// commandLines are the lines of out the Actions runner would obey: those
// that start, after white space, with "::" or "##[" (lines end at LF or CR).
func commandLines(out string) []string {
	var cmds []string
	for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if t := strings.TrimLeftFunc(l, unicode.IsSpace); strings.HasPrefix(t, "::") || strings.HasPrefix(t, "##[") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// Neutral lets no line written through it be a workflow command, however
// the writes split it, and passes ratelab's own commands unchanged.
func TestNeutral(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"a plain line stays", []string{"ratelab: target a\n"}, "ratelab: target a\n"},
		{"a command in a name", []string{"ratelab: target x\n::error::owned\n.lua\n"}, "ratelab: target x\n\\::error::owned\n.lua\n"},
		{"after white space", []string{" \t::add-mask::x\n"}, " \t\\::add-mask::x\n"},
		{"after Unicode white space", []string{"\u00a0\u2003::error::x\n"}, "\u00a0\u2003\\::error::x\n"},
		{"after CR", []string{"a\r::error::x\n"}, "a\r\\::error::x\n"},
		{"the old form", []string{"##[error]x\n"}, "\\##[error]x\n"},
		{"split across writes", []string{"a\n:", ":err", "or::x\n"}, "a\n\\::error::x\n"},
		{"a last line without LF, flushed", []string{"x\n::warning::y"}, "x\n\\::warning::y"},
		{"a Markdown heading stays", []string{"### ratelab verify\n"}, "### ratelab verify\n"},
		{"one colon stays", []string{":x\n"}, ":x\n"},
		{"inside a line stays", []string{"a ::error::x\n"}, "a ::error::x\n"},
	} {
		var b bytes.Buffer
		n := Neutralize(&b)
		for _, w := range tc.writes {
			if k, err := n.Write([]byte(w)); err != nil || k != len(w) {
				t.Fatalf("%s: Write: %d, %v", tc.name, k, err)
			}
		}
		if err := n.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, b.String(), tc.want)
		}
		if cmds := commandLines(b.String()); len(cmds) > 0 {
			t.Errorf("%s: commands the runner obeys: %q", tc.name, cmds)
		}
	}

	// ratelab's own, through a CountingWriter over a Neutral, after a
	// partial line: on a line of their own, unchanged, counted
	var b bytes.Buffer
	n := Neutralize(&b)
	c := &CountingWriter{W: n}
	_, _ = c.Write([]byte("partial"))
	own := "::error title=ratelab verify%3A a::x\n"
	if err := WriteCommands(c, []byte(own)); err != nil {
		t.Fatal(err)
	}
	if want := "partial\n" + own; b.String() != want || c.N != int64(len("partial")+len(own)) {
		t.Errorf("own commands: got %q (counted %d), want %q", b.String(), c.N, want)
	}
}
