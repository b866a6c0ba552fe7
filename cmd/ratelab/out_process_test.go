//go:build process

package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C says "interrupted", not "context canceled".
func TestInterruptedSaysSo(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "demo", "--redis", "exec", "--window", "10s", "--lead", "5s",
		"--algorithms", "sliding-log", "--out", t.TempDir(), "--format", "json")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // parked before the boundary
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	got := stderr.String()
	if strings.Contains(got, "context canceled") || !strings.Contains(got, "interrupted") {
		t.Errorf("after Ctrl-C stderr says %q; want \"interrupted\" and no \"context canceled\"", got)
	}
}
