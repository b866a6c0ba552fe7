package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewcomerScriptWithoutArgs replays a newcomer's first command: their
// own script, which reads its limit and window from ARGV, verified without
// --arg. The error names --arg, what the script reads, the placeholders and
// a command that works; the golden pins its words.
// Rewrite with: go test ./cmd/ratelab/ -run NewcomerScriptWithoutArgs -update
func TestNewcomerScriptWithoutArgs(t *testing.T) {
	t.Parallel()
	script := filepath.Join("testdata", "newcomer", "mine.lua")
	code, stdout, stderr := ratelab(t, "verify", "--script", script, "--limit", "10", "--window", "1m", "--redis", "exec")
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want exit 2, nothing on stdout; stderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"ratelab: --arg: mine.lua reads ARGV[1] (line 4) and ARGV[2] (line 5)", "{now_ms}", "{window_s}",
		"ratelab verify --script " + script + " --arg '{limit}' --arg '{window_s}' --limit 10 --window 1m --redis exec"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	got := fmt.Sprintf("exit: %d\n%s", code, stderr)
	path := filepath.Join("testdata", "golden", "stderr-verify-script-no-arg.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./cmd/ratelab/ -run NewcomerScriptWithoutArgs -update)", err)
	}
	if got != string(want) {
		t.Errorf("stderr differs from %s (- golden, + got; rewrite with -update):\n%s", path, diffMiddle(string(want), got))
	}
	// the example it gives is a command that runs: the same script, run
	// with the suggested templates, gets through its first call
	code, _, stderr = ratelab(t, "run", "--script", script, "--arg", "{limit}", "--arg", "{window_s}", "--scenarios", "cron-regions",
		"--algorithms", "fixed-window", "--limit", "10", "--window", "1m", "--redis", "exec", "--out", t.TempDir(), "--format", "json")
	if code != 0 {
		t.Errorf("with the suggested --arg: exit %d, want 0; stderr:\n%s", code, stderr)
	}
	// run says the same as verify, before any scenario
	code, _, stderr = ratelab(t, "run", "--script", script, "--scenarios", "boundary-burst", "--limit", "10", "--window", "1m", "--redis", "exec", "--out", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "ratelab: --arg: mine.lua reads ARGV[1] (line 4) and ARGV[2] (line 5)") {
		t.Errorf("run without --arg: exit %d, want 2 naming --arg; stderr:\n%s", code, stderr)
	}
}

// TestNewcomerClocklessRun: a script that reads no clock (INCR + EXPIRE
// from the first hit) gets its row from run, in virtual time, its TTLs on
// the virtual clock, as verify judges it: on cron-regions its window,
// restarted by the first hit after each expiry, lets 19 through in one
// trailing minute (a first-hit window's 2L-1 at L = 10).
func TestNewcomerClocklessRun(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := ratelab(t, "run", "--script", filepath.Join("testdata", "newcomer", "clockless.lua"), "--scenarios", "cron-regions",
		"--algorithms", "fixed-window", "--limit", "10", "--window", "1m", "--redis", "exec", "--out", out, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	var res struct {
		Results []struct {
			Algorithm   string  `json:"algorithm"`
			Clock       string  `json:"clock"`
			MaxInWindow int64   `json:"max_in_window"`
			Ratio       float64 `json:"ratio"`
		} `json:"results"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the results' JSON: %v\n%s", err, stdout)
	}
	found := false
	for _, r := range res.Results {
		if r.Algorithm != "clockless.lua" {
			continue
		}
		found = true
		if r.Clock != "virtual" || r.MaxInWindow != 19 || r.Ratio < 1.85 {
			t.Errorf("clockless.lua: clock %s, max in W %d, ratio %.2f; want virtual, 19, 1.90", r.Clock, r.MaxInWindow, r.Ratio)
		}
	}
	if !found {
		t.Fatalf("no row of clockless.lua among %+v; stderr:\n%s", res.Results, stderr)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "clockless.lua reads no clock: it ran in virtual time") {
		t.Errorf("notes %q: none says how the clock-less script ran", res.Notes)
	}
}
