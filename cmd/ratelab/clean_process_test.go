//go:build process

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// Clean --yes during a live run skips it, says so, and the run
// ends with its own figures.
func TestCleanSkipsLiveRun(t *testing.T) {
	v := startVictim(t)
	c := v.client(t)
	url := "redis://" + v.addr
	out := t.TempDir()
	// a 10 s window: the run's keys live for seconds after its bursts (±1 s), so clean
	// meets them alive even on a loaded machine
	done := runAsync("run", "--redis", url, "--clock", "redis", "--window", "10s", "--limit", "20",
		"--scenarios", "boundary-burst", "--algorithms", "sliding-log,fixed-window", "--out", out, "--format", "json")
	ctx := context.Background()
	var keys []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		all, _ := server.ScanKeys(ctx, c, server.KeyPrefix)
		keys = keys[:0]
		for _, k := range all {
			// the run's own keys, not the access check's probe keys ("ratelab:access-check:...")
			if strings.Contains(k, "sliding-log") && !strings.Contains(k, ":"+server.AccessCheckInfix) {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run wrote no keys within 20 s: %v", all)
		}
	}
	code, stdout, stderr := ratelab(t, "clean", "--redis", url, "--yes")
	if code != exitOK || !strings.Contains(stdout, "live run") || !strings.Contains(stdout, "skipped") ||
		!strings.Contains(stdout, "removed 0 keys") {
		t.Errorf("clean --yes during a run: exit %d, %q %q", code, stdout, stderr)
	}
	for _, k := range keys {
		if c.Exists(ctx, k).Val() == 0 && c.PTTL(ctx, k).Val() != -2 {
			t.Errorf("%s removed", k)
		}
	}
	prefix := keys[0][:len(server.KeyPrefix)+len("20261122T030515-cfab:")]
	id := strings.TrimSuffix(strings.TrimPrefix(prefix, server.KeyPrefix), ":")
	code, _, stderr = ratelab(t, "clean", "--redis", url, "--run", id, "--yes")
	if code != exitUsage || !strings.Contains(stderr, "--run: run "+id+" is still running") {
		t.Errorf("clean --run %s --yes during the run: exit %d, %q", id, code, stderr)
	}
	r := <-done
	if r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	res, err := measure.ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Results {
		if row.Algorithm == "sliding-log" && row.MaxInWindow > row.Limit {
			t.Errorf("sliding-log accepted %d in a window of limit %d: its keys went during the run", row.MaxInWindow, row.Limit)
		}
	}
	if n := ratelabKeys(t, c); n != 0 {
		t.Errorf("the run left %d keys", n)
	}
}
