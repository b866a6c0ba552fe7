package main

import (
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/version"
)

// ratelab --version prints the build's version (the one every result's
// header records) and exits 0.
func TestVersionFlag(t *testing.T) {
	code, stdout, stderr := ratelab(t, "--version")
	if want := "ratelab version " + version.String() + "\n"; code != exitOK || stdout != want {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout, stderr, want)
	}
	if strings.TrimSpace(version.String()) == "" {
		t.Errorf("empty version")
	}
}

// A --format a command does not take is refused before any work, naming
// the flag and what it takes.
func TestFormatRefused(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--format", "xml"}, `--format: unknown format "xml" (want table, markdown, json or csv)`},
		{[]string{"verify", "--algorithm", "sliding-log", "--limit", "5", "--window", "1s", "--format", "csv"}, `--format: unknown format "csv" (want table or json)`},
		{[]string{"bench", "--format", "html"}, `--format: unknown format "html" (want table, markdown, json or csv)`},
		{[]string{"capacity", "--format", "yaml"}, `--format: unknown format "yaml"`},
		{[]string{"report", t.TempDir(), "--format", "pdf"}, `--format: unknown format "pdf"`},
	}
	for i, c := range cases {
		if c.args[0] != "report" { // never reached: a Redis that would refuse
			c.args = append(c.args, "--redis", "redis://127.0.0.1:1")
		}
		code, _, stderr := ratelab(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("case %d %v: exit %d, stderr %q; want exit 2 and %q", i, c.args, code, stderr, c.want)
		}
	}
}
