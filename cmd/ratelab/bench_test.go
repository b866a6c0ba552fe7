package main

import (
	"strings"
	"testing"
)

// a deny path whose hot key is never denied (a limit of
// 1e18) is refused with exit 2 naming --limit, found in the deny path's
// warm-up, and the results written are marked incomplete. The size bounds
// refuse a pipeline or key space that would not fit in memory, and a rate
// that is not a number.
func TestBenchRefusesWhatItCannotMeasure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"deny path never denies",
			[]string{"bench", "--redis", "exec", "--algorithms", "fixed-window", "--paths", "deny", "--limit", "100000",
				"--clients", "2", "--duration", "400ms", "--out", t.TempDir()},
			[]string{"--limit: fixed-window deny path: the hot key was never denied", "results marked incomplete"}},
		{"deny limit past the bound", // refused before anything is measured
			[]string{"bench", "--redis", "exec", "--algorithms", "fixed-window", "--paths", "deny", "--limit", "1e18", "--out", t.TempDir()},
			[]string{"--limit: at most 100000 with the deny path"}},
		{"pipeline too large", []string{"bench", "--pipeline", "1000000000"}, []string{"--pipeline: must be at most 10000"}},
		{"keys too many", []string{"bench", "--keys", "1000000000000"}, []string{"--keys: must be at most 10000000"}},
		{"rate not a number", []string{"bench", "--rate", "NaN"}, []string{"--rate: must be a finite number >= 0, got NaN"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := ratelab(t, c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
}
