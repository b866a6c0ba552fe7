package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/version"
	"github.com/ratelab/ratelab/measure"
)

// ratelab --version prints the build's version (the one every result's
// header records) and exits 0.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// `ratelab report` re-renders a verify --out directory from its
// verify.json, of this shape (the same header) or the one before it
// ("incomplete" instead of "complete").
func TestReportVerifyDir(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "v")
	code, first, stderr := ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "300ms",
		"--redis", "exec", "--format", "json", "--out", out)
	if code != exitOK {
		t.Fatalf("verify: exit %d, %s", code, stderr)
	}
	code, again, stderr := ratelab(t, "report", out, "--format", "json")
	var a, b measure.VerifyReport
	if code != exitOK || json.Unmarshal([]byte(first), &a) != nil || json.Unmarshal([]byte(again), &b) != nil ||
		!b.Complete || b.RunID == "" || b.RunID != a.RunID || b.Repro.Seed != 1 || b.Redis.Version == "" {
		t.Fatalf("report of a verify dir: exit %d, stderr %s\n%s", code, stderr, again)
	}
	if code, _, stderr := ratelab(t, "report", out, "--format", "csv"); code != exitUsage || !strings.Contains(stderr, `--format: unknown format "csv" (want table or json)`) {
		t.Errorf("report --format csv of a verify dir: exit %d, %s", code, stderr)
	}
	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, "verify.json"), []byte(`{"incomplete":true,"error":"redis gone","target":"sliding-log","limit_desc":"10 per 1s","verdict":"","families":null}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := ratelab(t, "report", old, "--format", "json")
	var o measure.VerifyReport
	if code != exitOK || json.Unmarshal([]byte(stdout), &o) != nil || o.Complete || o.Error != "redis gone" || strings.Contains(stdout, `"incomplete"`) {
		t.Errorf("report of a round-1 verify.json: exit %d, stderr %s\n%s", code, stderr, stdout)
	}
}
