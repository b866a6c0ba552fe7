package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input to capacity and bench: exit 2 and a message naming the flag.
func TestCapacityBenchBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"capacity unknown algorithm", []string{"capacity", "--algorithms", "leaky"}, `--algorithms: unknown algorithm "leaky"`},
		{"capacity limit zero", []string{"capacity", "--limits", "10,0"}, "--limits: every limit must be >= 1, got 0"},
		{"capacity limits not numbers", []string{"capacity", "--limits", "ten"}, `invalid argument "ten" for "--limits"`},
		{"capacity keys zero", []string{"capacity", "--keys", "0"}, "--keys: must be >= 1, got 0"},
		{"capacity active keys", []string{"capacity", "--active-keys", "-1"}, "--active-keys: must be >= 1, got -1"},
		{"capacity short window", []string{"capacity", "--window", "10s"}, "--window: must be >= 1m"},
		{"capacity precision over window", []string{"capacity", "--precision", "2h"}, "--precision: must be in 0..window"},
		{"capacity budget", []string{"capacity", "--budget", "0"}, "--budget: must be >= 1, got 0"},
		{"capacity format", []string{"capacity", "--format", "xml"}, `--format: unknown format "xml"`},
		{"bench unknown path", []string{"bench", "--paths", "sideways"}, `--paths: unknown path "sideways"`},
		{"bench clients", []string{"bench", "--clients", "0"}, "--clients: must be in 1..1000, got 0"},
		{"bench pipeline", []string{"bench", "--pipeline", "0"}, "--pipeline: must be >= 1, got 0"},
		{"bench duration", []string{"bench", "--duration", "0s"}, "--duration: must be > 0, got 0s"},
		{"bench rate", []string{"bench", "--rate", "-5"}, "--rate: must be >= 0, got -5"},
		{"bench rate with comparison", []string{"bench", "--rate", "1000", "--compare-redis-benchmark"}, "--rate: redis-benchmark cannot pace"},
		{"bench missing redis-benchmark", []string{"bench", "--compare-redis-benchmark", "--redis-benchmark", "/nonexistent/rb"}, "--compare-redis-benchmark: /nonexistent/rb not found"},
		{"bench unreachable redis", []string{"bench", "--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--out", t.TempDir()}, "--redis redis://127.0.0.1:1: cannot reach Redis"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := ratelab(t, c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not contain %q", stderr, c.want)
			}
		})
	}
}

// Small capacity and bench runs end to end: JSON rows with the contract's
// fields on stdout, the directory written, and report re-renders it.
func TestCapacityAndBenchEndToEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		args   []string
		fields []string
		files  []string
	}{
		{"capacity",
			[]string{"capacity", "--redis", "exec", "--algorithms", "sliding-log", "--limits", "128,129", "--keys", "50", "--budget", "5000"},
			[]string{"algorithm", "limit", "encoding", "memory_bytes", "bytes_per_entry", "used_memory_delta_bytes", "projected_bytes"},
			[]string{"results.json", "report.md", "memory.png", "memory.svg"}},
		{"bench",
			[]string{"bench", "--redis", "exec", "--algorithms", "fixed-window", "--clients", "2", "--requests", "200", "--keys", "100", "--compare-redis-benchmark", "--rounds", "1"},
			[]string{"algorithm", "path", "clients", "pipeline", "decisions_per_s", "p50_us", "p99_us", "p999_us", "redis_benchmark_per_s", "vs_redis_benchmark"},
			[]string{"results.json", "report.md", "throughput.png", "latency-allow.png", "latency-deny.png"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := ratelab(t, append(c.args, "--format", "json", "--out", out)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var res struct {
				Command string           `json:"command"`
				Results []map[string]any `json:"results"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
			}
			if res.Command != c.name || len(res.Results) != 2 {
				t.Fatalf("command %q, %d rows", res.Command, len(res.Results))
			}
			for _, f := range c.fields {
				if _, ok := res.Results[0][f]; !ok {
					t.Errorf("row has no %q: %v", f, res.Results[0])
				}
			}
			for _, f := range c.files {
				if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
			code, stdout, stderr = ratelab(t, "report", out, "--format", "markdown")
			if code != exitOK || !strings.Contains(stdout, "| "+res.Results[0]["algorithm"].(string)) {
				t.Errorf("report: exit %d stdout %q stderr %q", code, stdout, stderr)
			}
		})
	}
}

func TestCapacityBenchHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"capacity", "--help"}, {"bench", "--help"}} {
		code, stdout, _ := ratelab(t, args...)
		if code != exitOK || !strings.Contains(stdout, "Examples:") {
			t.Errorf("%v: exit %d, no examples in %q", args, code, stdout)
		}
	}
}
