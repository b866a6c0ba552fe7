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

// Ctrl-C stops a verify with a large limit within a second.
func TestVerifyInterruptedQuickly(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin, "verify", "--algorithm", "sliding-log", "--limit", "10000", "--window", "24h", "--redis", "exec")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// verify says its plan ("... virtual-time trials ...") once Redis is open and before the trials.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stderr.String(), "virtual-time trials") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // into the trials
	if cmd.ProcessState != nil || !strings.Contains(stderr.String(), "virtual-time trials") {
		t.Fatalf("verify did not start its trials within 20 s: %s", stderr.String())
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	sent := time.Now()
	_ = cmd.Wait()
	took := time.Since(sent)
	t.Logf("verify stopped %v after Ctrl-C; stderr: %s", took.Round(time.Millisecond), stderr.String())
	if took > 2*time.Second {
		t.Errorf("verify took %v to stop after Ctrl-C", took)
	}
	if code := cmd.ProcessState.ExitCode(); code != harness.ExitInterrupted {
		t.Errorf("exit %d after Ctrl-C, want 130", code)
	}
}
