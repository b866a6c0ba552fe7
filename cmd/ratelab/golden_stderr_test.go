package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenStderr pins what each command prints on stderr, and its exit
// code, for usage errors: the words a user reads when a flag is wrong, which
// a refactor of the commands must not change unnoticed. Only errors found
// before any Redis is needed; stdout must stay empty.
// Rewrite with: go test ./cmd/ratelab/ -run GoldenStderr -update
func TestGoldenStderr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
	}{
		// cobra's own errors, with the command's help pointer
		{"unknown-command", []string{"frobnicate"}},
		{"run-unknown-flag", []string{"run", "--bogus"}},
		{"run-limit-not-a-number", []string{"run", "--limit", "abc"}},
		{"bench-window-not-a-duration", []string{"bench", "--window", "ten"}},
		{"report-no-dir", []string{"report"}},
		// ratelab's checks, naming the flag
		{"run-limit-zero", []string{"run", "--limit", "0"}},
		{"run-window-too-long", []string{"run", "--window", "1000000h"}},
		{"run-unknown-algorithm", []string{"run", "--algorithms", "leaky-bucket"}},
		{"run-bad-format", []string{"run", "--format", "xml"}},
		{"verify-two-targets", []string{"verify", "--algorithm", "sliding-log", "--script", "limiter.lua"}},
		{"verify-exec-and-script", []string{"verify", "--exec", "python3 adapter.py", "--script", "limiter.lua", "--limit", "10", "--window", "1s"}},
		{"run-exec-and-script", []string{"run", "--exec", "python3 adapter.py", "--script", "limiter.lua"}},
		{"verify-no-limit", []string{"verify", "--algorithm", "sliding-log"}},
		{"verify-replay-junit", []string{"verify", "--replay", "verify.json", "--junit", "-"}},
		{"verify-bad-format", []string{"verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--format", "csv"}},
		{"capacity-keys-zero", []string{"capacity", "--keys", "0"}},
		{"bench-clients-zero", []string{"bench", "--clients", "0"}},
		{"demo-window-too-short", []string{"demo", "--window", "10ms"}},
		{"report-not-a-dir", []string{"report", "no-such-dir"}},
		{"clean-not-a-url", []string{"clean", "--redis", "exec"}},
		// a function library given as a script, and a library of several
		// functions without --fcall: the library's functions listed
		{"verify-script-is-library", []string{"verify", "--script", "testdata/functions/two-limits.lua", "--limit", "10", "--window", "1m"}},
		{"verify-function-several", []string{"verify", "--function", "testdata/functions/two-limits.lua", "--limit", "10", "--window", "1m"}},
		{"verify-function-unknown-fcall", []string{"verify", "--function", "testdata/functions/two-limits.lua", "--fcall", "per_day", "--limit", "10", "--window", "1m"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ratelab(t, c.args...)
			if stdout != "" {
				t.Errorf("ratelab %s: stdout %q, want nothing", strings.Join(c.args, " "), stdout)
			}
			got := fmt.Sprintf("exit: %d\n%s", code, stderr)
			path := filepath.Join("testdata", "golden", "stderr-"+c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (create it with: go test ./cmd/ratelab/ -run GoldenStderr -update)", err)
			}
			if got != string(want) {
				t.Errorf("ratelab %s: stderr or exit code differs from %s (- golden, + got; rewrite with -update):\n%s",
					strings.Join(c.args, " "), path, diffMiddle(string(want), got))
			}
		})
	}
}
