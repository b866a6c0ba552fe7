package main

import (
	"strings"
	"testing"
)

// An adapter that breaks the line protocol stops verify with exit 2,
// naming the command and quoting its line and its stderr.
func TestVerifyExecBrokenAdapter(t *testing.T) {
	t.Parallel()
	adapter := `read -r line; echo "loading the limiter" >&2; echo 'ALLOWED'`
	code, _, stderr := ratelab(t, "verify", "--exec", adapter, "--limit", "3", "--window", "1s", "--redis", "exec")
	for _, want := range []string{`exec "read -r line;`, `its line: "ALLOWED"`, `not an answer {"allowed": true|false}`, "loading the limiter"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
}

// run --exec puts the adapter's row beside the built-ins', named by its
// command.
func TestRunExec(t *testing.T) {
	t.Parallel()
	adapter := `while read -r line; do echo '{"allowed": true}'; done`
	code, stdout, stderr := ratelab(t, "run", "--exec", adapter, "--algorithms", "sliding-log", "--scenarios", "boundary-burst", "--limit", "5", "--window", "1s",
		"--redis", "exec", "--out", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "| sliding-log") || !strings.Contains(stdout, "while read -r line") {
		t.Errorf("no row for the adapter beside sliding-log:\n%s", stdout)
	}
}
