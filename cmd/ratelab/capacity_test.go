package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Sizes that could reach a panic (makeslice) or an
// endless fill are refused up front, exit 2 naming the flag, at once.
func TestCapacityHugeSizes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"limit 1e18", []string{"--limits", "1000000000000000000"}, "--limits: every limit must be <= 9007199254740992"},
		{"limit int64 max", []string{"--limits", "9223372036854775807"}, "--limits: every limit must be <="},
		{"sliding-log over the budget", []string{"--algorithms", "sliding-log", "--limits", "1000000"}, "--limits: 1000000: sliding-log makes 1000000 script calls per key"},
		{"budget huge", []string{"--budget", "1000000000000000000"}, "--budget: must be <= 10000000"},
		{"keys huge", []string{"--keys", "9223372036854775807"}, "--keys: must be <= 10000000"},
		{"active keys huge", []string{"--active-keys", "9223372036854775807"}, "--active-keys: must be <= 1000000000000"},
		{"window huge", []string{"--window", "1000000h"}, "--window: must be <= 365d"},
		{"too many blocks", []string{"--algorithms", "bucketed-hash", "--window", "8760h", "--precision", "1ms"}, "--precision: must leave at most 10000 blocks per window"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			args := append([]string{"capacity", "--redis", "redis://127.0.0.1:1", "--out", t.TempDir()}, c.args...)
			code, _, stderr := ratelab(t, args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, c.want)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "cannot reach") {
				t.Errorf("reached past validation: %s", stderr)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v to refuse", d)
			}
		})
	}
}

// A read-only --out is refused before Redis is even
// opened (so before any measurement), and the error names --out.
func TestCapacityReadOnlyOut(t *testing.T) {
	t.Parallel()
	out := readOnlyDir(t)
	code, stdout, stderr := ratelab(t, "capacity", "--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "--out: "+out+" is not writable") {
		t.Errorf("exit %d, stderr %q; want exit %d naming --out", code, stderr, exitUsage)
	}
	if strings.Contains(stderr, "cannot reach") || stdout != "" {
		t.Errorf("went on past --out: stdout %q stderr %q", stdout, stderr)
	}
}

// readOnlyDir returns an existing directory the test process cannot write
// to: a 0555 directory, or for root (who ignores modes) a directory sysfs will not let be made.
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Getuid() == 0 {
		dir = "/sys/kernel/ratelab-out" // sysfs: root can create nothing there
	} else if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Create(filepath.Join(dir, "probe")); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skipf("%s is writable here: no read-only directory to test with", dir)
	}
	return dir
}
