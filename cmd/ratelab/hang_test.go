package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ctrlCBound is how long a command may take to end after Ctrl-C in these
// tests: the contract is 1 s, plus a margin of 500 ms for
// a loaded CI machine, where the command's last writes and its exit wait
// for a CPU (measured on 2 cores at load 20: 0.3-0.75 s; drawing plots
// after the signal would take 1.3-4.8 s there, so none are drawn).
const ctrlCBound = time.Second + 500*time.Millisecond

// childPIDs lists the processes pid started (Linux: /proc).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// bench --rate 0.0001 paces one pipeline per 80,000 s: its
// warm-up (a run of a duration) waited for the next one and never ended.
// A run of a duration now ends when its next pipeline falls after it.
func TestBenchTinyRateEnds(t *testing.T) {
	t.Parallel()
	ch := runAsync("bench", "--algorithms", "gcra", "--paths", "allow", "--rate", "0.0001", "--duration", "1s", "--rounds", "1",
		"--redis", "exec", "--out", t.TempDir())
	select {
	case r := <-ch:
		if r.code != exitOK {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("bench --rate 0.0001 still running after 60 s")
	}
}
