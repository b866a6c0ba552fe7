package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTraffic writes a CSV of n requests, one per ms over 2000 keys.
func writeTraffic(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,key\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d,k%d\n", i, i%2000)
	}
	path := filepath.Join(t.TempDir(), "traffic.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// a target given twice (both rows shared keys: 100 and 0
// accepted) and a target the command would drop (run --traffic ran the
// built-ins and left --script out) are refused before Redis is opened.
func TestDuplicateAndDroppedTargets(t *testing.T) {
	t.Parallel()
	script := writeFile(t, "s.lua", "return 1\n")
	traffic := writeFile(t, "t.csv", "timestamp,key\n1,a\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--algorithms", "fixed-window,fixed-window"}, "--algorithms: fixed-window given twice"},
		{[]string{"capacity", "--algorithms", "sliding-log,gcra,sliding-log"}, "--algorithms: sliding-log given twice"},
		{[]string{"bench", "--algorithms", "gcra,gcra"}, "--algorithms: gcra given twice"},
		{[]string{"run", "--script", script, "--script", script}, "--script: " + script + " given twice"},
		{[]string{"run", "--scenarios", "steady,steady"}, "--scenarios: steady given twice"},
		{[]string{"run", "--traffic", traffic, "--limit", "10", "--window", "1s", "--script", script}, "--script: --traffic replays the built-in algorithms only"},
	} {
		// an address nothing listens on: refused before Redis is opened
		code, _, stderr := ratelab(t, append(tc.args, "--redis", "redis://127.0.0.1:1")...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// run --script with a script that does not compile is
// refused before its first call, exit 2 naming the flag, the file and
// Redis's message, guarded on a user's Redis or not. Before, run exited 0:
// on the virtual clock such a script (one that takes no injected time) is
// left out of every scenario, with a note; on Redis's clock its every call
// failed and the run went on to the end of its scenario.
func TestScriptDoesNotCompile(t *testing.T) {
	bad := writeFile(t, "bad.lua", "return 1 +\n")
	v := startVictim(t)
	for _, tc := range [][]string{
		{"run", "--redis", "redis://" + v.addr},
		{"run", "--redis", "redis://" + v.addr, "--trust-script", "--clock", "redis"},
		{"run", "--redis", "exec", "--arg", "{now_ms}"},
		{"verify", "--redis", "redis://" + v.addr, "--limit", "10", "--window", "1s"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := append(tc, "--script", bad, "--scenarios", "boundary-burst", "--out", out)
		if tc[0] == "verify" {
			args = append(tc, "--script", bad)
		}
		start := time.Now()
		code, _, stderr := ratelab(t, args...)
		if want := "--script: bad.lua does not compile: ERR Error compiling script"; code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc, code, stderr, want)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%v: refused after %v: it ran first", tc, took)
		}
		if _, err := os.Stat(out); tc[0] == "run" && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%v: the --out directory it created is left behind (%v)", tc, err)
		}
	}
}
