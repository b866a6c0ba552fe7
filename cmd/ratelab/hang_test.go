package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// issue 24 item 7: Ctrl-C ends every command within 1 s even when its
// Redis hangs (SIGSTOP): the built binary, real signals, a real
// redis-server. Before, go-redis waited out each call's read timeout:
// run 11 s, verify 14 s, bench 111 s, demo 21 s, a replay 21 s.
func TestCtrlCWithRedisStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and stops a redis-server per command")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	traffic := filepath.Join(dir, "traffic.csv")
	var b strings.Builder
	b.WriteString("timestamp,key\n")
	for i := 1; i <= 400000; i++ {
		b.WriteString(strconv.Itoa(i) + ",k" + strconv.Itoa(i%2000) + "\n")
	}
	if err := os.WriteFile(traffic, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		// ready is a line of stderr that says the command is at work
		ready string
	}{
		{"run virtual", []string{"run", "--scenarios", "cron-regions,overload", "--window", "24h"}, "virtual clock"},
		{"run redis clock", []string{"run", "--clock", "redis", "--scenarios", "overload", "--window", "2s"}, "waiting"},
		{"run --traffic", []string{"run", "--traffic", traffic, "--limit", "10", "--window", "1s"}, "replaying"},
		{"verify", []string{"verify", "--algorithm", "sliding-log", "--limit", "2000", "--window", "1h"}, "virtual-time trials"},
		{"capacity", []string{"capacity", "--algorithms", "sliding-log", "--limits", "100,1000,10000"}, "Redis 7"},
		{"bench", []string{"bench", "--algorithms", "sliding-log", "--duration", "10s"}, "Redis 7"},
		{"demo", []string{"demo"}, "Redis 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := startVictim(t)
			args := append(c.args, "--redis", "redis://"+v.addr)
			if c.args[0] == "run" {
				args = append(args, "--out", t.TempDir(), "--force")
			}
			cmd := exec.Command(bin, args...)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stderr.String(), c.ready); {
				if time.Now().After(deadline) {
					t.Fatalf("%s did not start within 20 s: %s", c.name, stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // into the work
			v.signal(t, syscall.SIGSTOP)
			defer v.signal(t, syscall.SIGCONT)
			time.Sleep(300 * time.Millisecond) // calls now wait on the stopped server
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			sent := time.Now()
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s still running 30 s after Ctrl-C: %s", c.name, stderr.String())
			}
			took := time.Since(sent)
			t.Logf("%s: exit %d %v after Ctrl-C", c.name, cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
			if took > time.Second {
				t.Errorf("%s took %v to end after Ctrl-C with Redis stopped (contract: 1 s); stderr:\n%s", c.name, took, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted && code != exitUsage && code != exitOK {
				t.Errorf("exit %d", code)
			}
		})
	}
}

// issue 24 item 7: bench --rate 0.0001 paces one pipeline per 80,000 s: its
// warm-up (a run of a duration) waited for the next one and never ended.
// A run of a duration now ends when its next pipeline falls after it.
func TestBenchTinyRateEnds(t *testing.T) {
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
