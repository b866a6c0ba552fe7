package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// two commands started together with the same new --out
// never share it: one writes its results, the other exits 2 naming --out
// (before, both exited 0 with results mixed and decisions.jsonl
// interleaved).
func TestOutIsExclusive(t *testing.T) {
	bin := buildBinary(t)
	for trial := 0; trial < 3; trial++ {
		out := filepath.Join(t.TempDir(), "shared")
		var wg sync.WaitGroup
		codes, stderrs := make([]int, 2), make([]string, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(bin, "run", "--redis", "exec", "--scenarios", "boundary-burst",
					"--algorithms", "fixed-window", "--out", out, "--format", "csv",
					"--decisions", filepath.Join(out, "decisions.jsonl"))
				var stderr strings.Builder
				cmd.Stderr = &stderr
				_ = cmd.Run() // the exit code is what is checked
				codes[i], stderrs[i] = cmd.ProcessState.ExitCode(), stderr.String()
			}()
		}
		wg.Wait()
		ok, refused := 0, 0
		for i := range 2 {
			switch {
			case codes[i] == exitOK:
				ok++
			case codes[i] == exitUsage && strings.Contains(stderrs[i], "--out: "+out):
				refused++
			default:
				t.Errorf("trial %d: exit %d: %s", trial, codes[i], stderrs[i])
			}
		}
		if ok != 1 || refused != 1 {
			t.Errorf("trial %d: %d exited 0 and %d were refused naming --out, want 1 and 1; stderr: %q", trial, ok, refused, stderrs)
		}
		lines, _ := os.ReadFile(filepath.Join(out, "decisions.jsonl"))
		if n := strings.Count(string(lines), "\n"); n == 0 {
			t.Errorf("trial %d: decisions.jsonl empty", trial)
		}
	}
}

// --cpuprofile refuses an existing file without --force
// (before bench measures anything) and replaces it with --force.
func TestCPUProfileRefusesExisting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	if err := os.WriteFile(prof, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", "--redis", "exec", "--algorithms", "fixed-window", "--paths", "allow",
		"--requests", "2000", "--clients", "2", "--cpuprofile", prof, "--format", "csv"}
	code, _, stderr := ratelab(t, append(args, "--out", filepath.Join(dir, "a"))...)
	if code != exitUsage || !strings.Contains(stderr, "--cpuprofile: "+prof+" already exists") || !strings.Contains(stderr, "--force") {
		t.Errorf("existing --cpuprofile: exit %d, stderr %q; want 2 naming the flag and --force", code, stderr)
	}
	if b, _ := os.ReadFile(prof); string(b) != "mine" {
		t.Errorf("the existing profile was touched: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("refused before measuring, yet --out was created: %v", err)
	}
	code, _, stderr = ratelab(t, append(args, "--out", filepath.Join(dir, "b"), "--force")...)
	if code != exitOK {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(prof); len(b) == 0 || string(b) == "mine" {
		t.Errorf("--force did not replace the profile (%d bytes)", len(b))
	}
}
