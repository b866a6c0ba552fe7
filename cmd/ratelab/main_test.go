package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/measure"
)

func ratelab(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Bad input: exit 2 and a message that names the flag.
func TestBadInput(t *testing.T) {
	out := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown algorithm", []string{"run", "--algorithms", "leaky-bucket"}, `--algorithms: unknown algorithm "leaky-bucket"`},
		{"unknown scenario", []string{"run", "--scenarios", "tsunami"}, `--scenarios: unknown scenario "tsunami"`},
		{"limit zero", []string{"run", "--limit", "0"}, "--limit: must be >= 1, got 0"},
		{"limit negative", []string{"run", "--limit", "-5"}, "--limit: must be >= 1, got -5"},
		{"window zero", []string{"run", "--window", "0s"}, "--window: must be > 0, got 0s"},
		{"window negative", []string{"run", "--window", "-1s"}, "--window: must be > 0, got -1s"},
		{"window not a duration", []string{"run", "--window", "ten"}, `invalid argument "ten" for "--window"`},
		{"cost over limit", []string{"run", "--scenarios", "boundary-burst", "--cost", "51"}, "--cost: 51 exceeds the limit 50 of scenario boundary-burst"},
		{"cost over given limit", []string{"run", "--limit", "10", "--cost", "11"}, "--cost: 11 exceeds the limit 10"},
		{"bad clock", []string{"run", "--clock", "sundial"}, `--clock: unknown clock "sundial"`},
		// these panicked (makeslice, Int64N) or ran out of memory
		{"limit 1e18", []string{"run", "--limit", "1000000000000000000"}, "--limit: at most 100000 in a run"},
		{"limit int64 max", []string{"run", "--limit", "9223372036854775807"}, "--limit: at most 100000 in a run"},
		{"limit 1e7", []string{"run", "--limit", "10000000"}, "--limit: at most 100000 in a run"},
		{"window 1000000h", []string{"run", "--window", "1000000h"}, "--window: at most 3650d (ten years)"},
		// these panicked (Int64N, makeslice, thread exhaustion), or said no bound
		{"verify window 1000000h", []string{"verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1000000h"}, "--window: at most 3650d (ten years)"},
		{"verify window 2562047h", []string{"verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "2562047h"}, "--window: at most 3650d (ten years)"},
		{"verify L/W 1000000h", []string{"verify", "--algorithm", "sliding-log", "--limit", "10/1000000h"}, `--limit: "10/1000000h": window: at most 3650d (ten years)`},
		{"bench procs 100000", []string{"bench", "--procs", "100000"}, "--procs: must be in 0..256, got 100000"},
		{"run limit 1e18", []string{"run", "--limit", "1e18"}, "--limit: at most 100000 in a run"},
		{"verify limit 1e18", []string{"verify", "--algorithm", "sliding-log", "--limit", "1e18", "--window", "1s"}, "--limit: at most 100000"},
		{"bench limit 1e18", []string{"bench", "--limit", "1e18"}, "--limit: at most 100000 with the deny path"},
		{"min-fidelity NaN", []string{"verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--min-fidelity", "NaN"}, "--min-fidelity: must be in 0..1, got NaN"},
		{"arg divides by 0", []string{"verify", "--script", "../../algorithms/sliding_log.lua", "--arg", "{now_us % 0}", "--limit", "10", "--window", "1s"}, `--arg: ARGV[1]: template "{now_us % 0}", character 2: {now_us % 0} fails whatever the values: division by zero`},
		// each message names the flag the user gave
		{"scenarios twice", []string{"run", "--scenarios", "steady,steady"}, "--scenarios: steady given twice"},
		{"empty algorithms", []string{"run", "--algorithms", ""}, "--algorithms: empty; name at least one"},
		{"empty paths", []string{"bench", "--paths="}, "--paths: empty; name at least one"},
		{"L/0s", []string{"verify", "--algorithm", "sliding-log", "--limit", "10/0s"}, `--limit: "10/0s": window: must be >= 1ms, got 0s`},
		{"bad format", []string{"run", "--format", "xml"}, `--format: unknown format "xml"`},
		{"decisions in a missing directory, run", []string{"run", "--redis", "exec", "--scenarios", "steady", "--algorithms", "fixed-window", "--decisions", "/nonexistent/d.jsonl"}, "--decisions: open /nonexistent/d.jsonl"},
		{"decisions in a missing directory, verify", []string{"verify", "--redis", "exec", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--decisions", "/nonexistent/d.jsonl"}, "--decisions: open /nonexistent/d.jsonl"},
		{"unknown flag", []string{"run", "--bogus"}, "unknown flag: --bogus"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unreachable redis", []string{"run", "--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--out", out}, "--redis redis://127.0.0.1:1: cannot reach Redis at 127.0.0.1:1"},
		{"bad redis spec", []string{"run", "--redis", "memcached://x", "--out", out}, `--redis memcached://x: unknown Redis "memcached://x"`},
		{"report of no dir", []string{"report", filepath.Join(out, "nope")}, "is not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := ratelab(t, c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not contain %q", stderr, c.want)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stack trace in stderr: %s", stderr)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// A small run end to end: JSON on stdout, the files in --out, and report re-renders them.
func TestRunAndReport(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := ratelab(t, "run", "--redis", "exec", "--scenarios", "boundary-burst",
		"--algorithms", "fixed-window,sliding-log", "--format", "json", "--out", out, "--decisions", filepath.Join(out, "decisions.zst"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res measure.Results
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the results JSON: %v\n%s", err, stdout)
	}
	if len(res.Results) != 2 || res.Results[0].MaxInWindow != 100 || res.Results[1].MaxInWindow != 50 {
		t.Fatalf("rows: %+v", res.Results)
	}
	if n, _ := readDecisions(t, filepath.Join(out, "decisions.zst")); n != 200 {
		t.Errorf("decisions.zst holds %d decisions, want 200 (100 per algorithm)", n)
	}
	for _, f := range []string{"results.json", "decisions.zst", "report.md", "ratio.png", "ratio.svg", "timeline-boundary-burst.png", "timeline-boundary-burst.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	code, stdout, stderr = ratelab(t, "report", out, "--format", "markdown")
	if code != exitOK || !strings.Contains(stdout, "| fixed-window") {
		t.Errorf("report: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	// a malformed results.json is a clear error, exit 2
	if err := os.WriteFile(filepath.Join(out, "results.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = ratelab(t, "report", out)
	if code != exitUsage || !strings.Contains(stderr, "results.json") {
		t.Errorf("malformed results.json: exit %d stderr %q", code, stderr)
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"report", "--help"}} {
		code, stdout, _ := ratelab(t, args...)
		if code != exitOK || !strings.Contains(stdout, "Examples:") {
			t.Errorf("%v: exit %d, no examples in %q", args, code, stdout)
		}
	}
}
