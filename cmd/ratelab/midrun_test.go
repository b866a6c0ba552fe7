package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/server"
)

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// capacity registers its run like run and verify, so
// that clean lists a live capacity's keys as a live run's and removes none
// of them (before: no record, no marker: "no record" and a clean --run of
// it removed the keys of the run measuring them).
func TestCapacityRegistered(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	url := "redis://" + v.addr
	ch := runAsync("capacity", "--redis", url, "--algorithms", "sliding-log", "--limits", "1000", "--keys", "4000",
		"--budget", "400000", "--out", filepath.Join(t.TempDir(), "out"), "--format", "csv")
	var marker []string
	for deadline := time.Now().Add(30 * time.Second); len(marker) == 0; time.Sleep(20 * time.Millisecond) {
		marker, _ = c.Keys(context.Background(), server.KeyPrefix+"*:"+server.MarkerSuffix).Result()
		if time.Now().After(deadline) {
			t.Fatal("capacity wrote no marker within 30 s")
		}
	}
	runID := strings.TrimSuffix(strings.TrimPrefix(marker[0], server.KeyPrefix), ":"+server.MarkerSuffix)
	code, stdout, stderr := ratelab(t, "clean", "--redis", url, "--run", runID, "--yes")
	// skipped (clean exits 2 when it skips what --run named); the
	// capacity then ends complete: its keys were all there
	if !strings.Contains(stdout, "live run") {
		t.Errorf("clean --run %s --yes during capacity: exit %d, want it to skip a live run: %s %s", runID, code, stdout, stderr)
	}
	r := <-ch
	if r.code != exitOK {
		t.Fatalf("capacity: exit %d: %s", r.code, r.stderr)
	}
	if keys, _ := server.ScanKeys(context.Background(), c, server.KeyPrefix); len(keys) != 0 {
		t.Errorf("capacity left %d keys, e.g. %s", len(keys), keys[0])
	}
}
