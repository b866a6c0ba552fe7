//go:build process

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// Other people's data: after every command, a kill -9 and a Ctrl-C, every
// foreign key is byte-identical with its TTL, and ratelab never called
// FLUSHALL, FLUSHDB or KEYS.
func TestForeignKeysUntouched(t *testing.T) {
	v := startVictim(t)
	c := v.client(t)
	fillForeign(t, c, 10000)
	before := takeSnapshot(t, c)
	if len(before) != 10000 {
		t.Fatalf("filled %d keys", len(before))
	}
	url := "redis://" + v.addr
	commands := [][]string{
		{"run", "--redis", url, "--out", t.TempDir()},
		{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "10", "--window", "300ms"},
		{"capacity", "--redis", url, "--algorithms", "sliding-log,bucketed-hash", "--limits", "10,129", "--keys", "200", "--out", t.TempDir()},
		{"bench", "--redis", url, "--algorithms", "sliding-log", "--duration", "500ms", "--clients", "4", "--out", t.TempDir()},
	}
	for _, args := range commands {
		code, _, stderr := ratelab(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		compareSnapshots(t, args[0], before, takeSnapshot(t, c))
		if n := ratelabKeys(t, c); n != 0 {
			t.Errorf("%s left %d keys", args[0], n)
		}
	}

	bin := buildBinary(t)
	start := func(out string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, overloadArgs(v.addr, out)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		return cmd, &stderr
	}

	// Ctrl-C: stops within 1 s, results flushed and marked incomplete, keys removed
	out := t.TempDir()
	cmd, stderr := start(out)
	sent := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(sent)
	if took > time.Second {
		t.Errorf("Ctrl-C: stopped after %v, want within 1s", took)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != harness.ExitInterrupted {
		t.Errorf("Ctrl-C: %v, want exit %d; stderr %s", err, harness.ExitInterrupted, stderr)
	}
	res, err := measure.ReadResults(filepath.Join(out, "results.json"))
	if err != nil || res.Complete || res.Error == "" {
		t.Errorf("Ctrl-C: results %+v, %v", res, err)
	}
	if n, _ := readDecisions(t, filepath.Join(out, "decisions.jsonl")); n == 0 {
		t.Error("Ctrl-C: no decisions recorded")
	}
	if n := ratelabKeys(t, c); n != 0 {
		t.Errorf("Ctrl-C: %d keys left", n)
	}
	compareSnapshots(t, "Ctrl-C", before, takeSnapshot(t, c))

	// kill -9: its keys stay behind (with TTLs); clean lists them, then removes them
	cmd, _ = start(t.TempDir())
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// the run's keys have TTLs of about a window (1 s): hold them, so that the
	// counts below do not race their expiry on a slow machine (the liveness
	// marker keeps its TTL: the killed run must look dead)
	if keys, err := server.ScanKeys(context.Background(), c, server.KeyPrefix); err == nil {
		for _, k := range keys {
			if !strings.HasSuffix(k, "~alive") {
				c.Persist(context.Background(), k)
			}
		}
	}
	left := ratelabKeys(t, c)
	if left == 0 {
		t.Fatal("kill -9 left no keys: the test did not catch the run mid-way")
	}
	compareSnapshots(t, "kill -9", before, takeSnapshot(t, c))
	code, stdout, stderr2 := ratelab(t, "clean", "--redis", url)
	if code != exitOK || !strings.Contains(stdout, "would be removed") || ratelabKeys(t, c) != left {
		t.Errorf("clean (dry run): exit %d, %q %q, %d keys", code, stdout, stderr2, ratelabKeys(t, c))
	}
	code, stdout, _ = ratelab(t, "clean", "--redis", url, "--yes")
	if code != exitOK || !strings.Contains(stdout, fmt.Sprintf("removed %d keys", left)) || ratelabKeys(t, c) != 0 {
		t.Errorf("clean --yes: exit %d, %q, %d keys left", code, stdout, ratelabKeys(t, c))
	}
	compareSnapshots(t, "clean", before, takeSnapshot(t, c))

	stats := c.Info(context.Background(), "commandstats").Val()
	for _, cmd := range []string{"cmdstat_flushall:", "cmdstat_flushdb:", "cmdstat_keys:"} {
		if strings.Contains(stats, cmd) {
			t.Errorf("ratelab called %s on a Redis it did not start", strings.TrimSuffix(strings.TrimPrefix(cmd, "cmdstat_"), ":"))
		}
	}
	_ = os.Remove(bin)
}
