//go:build process

package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness"
)

// Ctrl-C (a real SIGINT to the binary) exits 130, SIGTERM 143, as shells
// report them.
func TestInterruptExits130(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, harness.ExitInterrupted}, {syscall.SIGTERM, harness.ExitTerminated}} {
		cmd := exec.Command(bin, "verify", "--algorithm", "sliding-log", "--limit", "10000", "--window", "24h", "--redis", "exec")
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stderr.String(), "virtual-time trials") && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(stderr.String(), "virtual-time trials") {
			_ = cmd.Process.Kill()
			t.Fatalf("verify did not start its trials within 20 s: %s", stderr.String())
		}
		if err := cmd.Process.Signal(c.sig); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != c.want {
			t.Errorf("exit %d after %v, want %d; stderr %s", code, c.sig, c.want, stderr.String())
		}
		if !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("%v: stderr does not say interrupted: %s", c.sig, stderr.String())
		}
	}
}
