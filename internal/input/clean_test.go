package input

import "testing"

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"sliding-log":                   "sliding-log",
		"line\nnext\ttab":               "line\nnext\ttab",
		"\x1b[31mred\x1b[0m":            `\u001b[31mred\u001b[0m`,
		"bell\x07 nul\x00 cr\r del\x7f": `bell\u0007 nul\u0000 cr\u000d del\u007f`,
		"csi\u009b2J":                   `csi\u009b2J`,
		"bad \xff\xfe utf8":             `bad \xff\xfe utf8`,
		"µs ±3 ✓":                       "µs ±3 ✓",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every string of a results value is cleaned, wherever it sits.
func TestCleanStrings(t *testing.T) {
	type row struct {
		Name  string
		Notes []string
		Extra map[string]string
		Any   any
		Next  *row
	}
	r := &row{Name: "\x1b]0;pwned\x07", Notes: []string{"ok", "\x1b[2J"}, Extra: map[string]string{"k": "\x1b[1m"},
		Any: "\x1b[5m", Next: &row{Name: "\x1bc"}}
	CleanStrings(r)
	for _, got := range []string{r.Name, r.Notes[1], r.Extra["k"], r.Any.(string), r.Next.Name} {
		if needsCleaning(got) {
			t.Errorf("left uncleaned: %q", got)
		}
	}
	if r.Notes[0] != "ok" {
		t.Errorf("clean text changed: %q", r.Notes[0])
	}
}
