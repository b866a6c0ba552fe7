//go:build process

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/engine/enginetest"
)

// `ratelab run --redis auto` without redis-server on PATH starts a container
// (image from RATELAB_REDIS_IMAGE); Ctrl-C during the run stops it, the
// results are marked incomplete, and the container is removed.
func TestContainerInterrupt(t *testing.T) {
	image := enginetest.Image(t)
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--redis", "auto",
		"--clock", "redis", "--scenarios", "steady", "--algorithms", "sliding-log", "--out", out, "--format", "json")
	cmd.Env = append(os.Environ(), "RATELAB_AS_MAIN=1", "PATH="+t.TempDir(), engine.ImageEnv+"="+image)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "waiting") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	during, _ := engine.Containers(context.Background(), cmd.Process.Pid)
	if len(during) != 1 || !strings.Contains(stderr.String(), "(container)") {
		t.Errorf("--redis auto without redis-server: no ratelab container while the run runs (stderr %q)", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := cmd.Wait()
	t.Logf("exited %v after Ctrl-C in %v; stderr:\n%s", err, time.Since(start).Round(time.Millisecond), stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != harness.ExitInterrupted {
		t.Errorf("exit %d after Ctrl-C, want 130 (run stopped early)", code)
	}
	if !strings.Contains(stderr.String(), "run stopped early") {
		t.Errorf("stderr does not say the run stopped early")
	}
	after, err := engine.Containers(context.Background(), cmd.Process.Pid)
	if err != nil || len(after) != 0 {
		t.Errorf("containers left behind after Ctrl-C: %v (%v)", after, err)
	}
	b, err := os.ReadFile(out + "/results.json")
	if err != nil || !bytes.Contains(b, []byte(`"complete": false`)) {
		t.Errorf("results.json not marked incomplete: %v", err)
	}
}
