//go:build process

package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// a virtual-time run gives the same rows on an idle
// machine and under a CPU hog, also when a call takes longer than the
// default --timeout (500 ms: Redis stopped 800 ms mid-run): in virtual time
// a slow call is waited for, never counted as failed-closed. Before, one
// 500 ms timeout at load 16 turned a decision into a failed-closed one
// (cron-regions 19000 -> 18999, errors 1).
func TestVirtualRunUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the machine")
	}
	v := startVictim(t)
	args := []string{"run", "--redis", "redis://" + v.addr, "--scenarios", "cron-regions", "--format", "json"}
	code, idle, stderr := ratelab(t, append(args, "--out", t.TempDir())...)
	if code != exitOK {
		t.Fatalf("idle run: exit %d: %s", code, stderr)
	}
	want, wantMem := maskedRows(t, idle)

	// two spinning processes on this 2-core machine, for the second run
	for range 2 {
		hog := exec.Command(os.Args[0], "-test.run=^TestHelperCPUHog$")
		hog.Env = append(os.Environ(), "RATELAB_CPU_HOG=1")
		hog.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hog.Process.Kill(); _ = hog.Wait() })
	}
	var stdout strings.Builder
	var errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- Main(append(args, "--out", t.TempDir()), &stdout, &errb) }()
	stalled := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(errb.String(), "virtual clock") {
			time.Sleep(50 * time.Millisecond)
			v.signal(t, syscall.SIGSTOP) // a call now waits longer than the default --timeout
			time.Sleep(800 * time.Millisecond)
			v.signal(t, syscall.SIGCONT)
			stalled = true
			break
		}
	}
	code = <-done
	if code != exitOK {
		t.Fatalf("run under load: exit %d: %s", code, errb.String())
	}
	got, gotMem := maskedRows(t, stdout.String())
	if got != want {
		t.Errorf("rows under load (Redis stopped 800 ms: %v) differ from the idle run's:\n%s\n--- idle:\n%s", stalled, got, want)
	}
	for i := range wantMem {
		if d := wantMem[i] - gotMem[i]; d*100 > wantMem[i] || -d*100 > wantMem[i] {
			t.Errorf("row %d: memory %d idle, %d under load", i, wantMem[i], gotMem[i])
		}
	}
}
