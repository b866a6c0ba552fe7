package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --out never mixes old and new results. A directory with
// files that are not ratelab's is refused; one with an earlier run's results
// is refused without --force, and with --force holds only the new run's files.
func TestOutNeverMixes(t *testing.T) {
	t.Parallel()
	args := func(out string, extra ...string) []string {
		return append([]string{"run", "--scenarios", "boundary-burst", "--algorithms", "fixed-window",
			"--redis", "exec", "--out", out, "--format", "csv"}, extra...)
	}
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := ratelab(t, args(foreign, "--force")...); code != exitUsage || !strings.Contains(stderr, "--out: ") || !strings.Contains(stderr, "notes.txt") {
		t.Errorf("foreign files in --out: exit %d, stderr %q; want exit 2 naming --out and the file", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(foreign, "notes.txt")); string(b) != "mine" {
		t.Errorf("the user's file was touched: %q", b)
	}

	out := t.TempDir()
	if code, _, stderr := ratelab(t, args(out)...); code != exitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	stale := filepath.Join(out, "timeline-old-scenario.png")
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := ratelab(t, args(out)...); code != exitUsage || !strings.Contains(stderr, "--out: ") || !strings.Contains(stderr, "--force") {
		t.Errorf("second run without --force: exit %d, stderr %q; want exit 2 naming --out and --force", code, stderr)
	}
	if code, _, stderr := ratelab(t, args(out, "--force")...); code != exitOK {
		t.Fatalf("second run with --force: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a file of the earlier run survived --force: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Errorf("no results.json after --force: %v", err)
	}
}

// a run that cannot reach Redis leaves no empty results
// directory behind.
func TestNoEmptyOutWhenRedisIsUnreachable(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "results", "x")
	code, _, stderr := ratelab(t, "run", "--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--out", out)
	if code != exitUsage {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out %s exists after a run that never reached Redis (%v)", out, err)
	}
}
