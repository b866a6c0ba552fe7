//go:build process

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

	"github.com/ratelab/ratelab/harness"
)

// Ctrl-C ends every command within 1 s even when its
// Redis hangs (SIGSTOP): the built binary, real signals, a real
// redis-server (one given by URL, or the throwaway one of --redis exec).
// Before, go-redis waited out each call's read timeout: run 11 s, verify
// 14 s, bench 111 s, demo 21 s, a replay 21 s; then the results
// directory's plots, 1.3-4.8 s on a loaded machine, and a stopped
// throwaway server's 3 s SIGTERM wait. A command that writes results
// leaves results.json alone, marked incomplete.
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
		// exec: the command's own throwaway redis-server (--redis exec) is
		// stopped, else one given by URL
		exec bool
		// results: the command writes a results directory (--out)
		results bool
		// connecting: the server is stopped before the command starts, which
		// then waits for its first answer (ready is empty)
		connecting bool
	}{
		{"run virtual", []string{"run", "--scenarios", "cron-regions,overload", "--limit", "20000", "--window", "24h"}, "virtual clock", false, true, false},
		{"run redis clock", []string{"run", "--clock", "redis", "--scenarios", "overload", "--window", "2s"}, "waiting", false, true, false},
		{"run --traffic", []string{"run", "--traffic", traffic, "--limit", "10", "--window", "1s"}, "replaying", false, true, false},
		{"verify", []string{"verify", "--algorithm", "sliding-log", "--limit", "2000", "--window", "1h"}, "virtual-time trials", false, false, false},
		{"capacity", []string{"capacity", "--algorithms", "sliding-log", "--limits", "100,1000,10000"}, "Redis 7", false, true, false},
		{"bench", []string{"bench", "--algorithms", "sliding-log", "--duration", "10s"}, "Redis 7", false, true, false},
		{"demo", []string{"demo"}, "Redis 7", false, true, false},
		{"run virtual, exec", []string{"run", "--scenarios", "cron-regions,overload", "--limit", "20000", "--window", "24h"}, "virtual clock", true, true, false},
		{"verify, exec", []string{"verify", "--algorithm", "sliding-log", "--limit", "2000", "--window", "1h"}, "virtual-time trials", true, false, false},
		{"bench, exec", []string{"bench", "--algorithms", "sliding-log", "--duration", "10s"}, "Redis 7", true, true, false},
		{"verify, connecting", []string{"verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--connect-timeout", "20s"}, "", false, false, true},
		{"clean, connecting", []string{"clean", "--connect-timeout", "20s"}, "", false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			var stop func(sig syscall.Signal)
			if c.exec {
				args = append(args, "--redis", "exec")
			} else {
				v := startVictim(t)
				args = append(args, "--redis", "redis://"+v.addr)
				stop = func(sig syscall.Signal) { v.signal(t, sig) }
			}
			out := t.TempDir()
			if c.results {
				args = append(args, "--out", out, "--force")
			}
			if c.connecting {
				stop(syscall.SIGSTOP)
				defer stop(syscall.SIGCONT)
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
			if c.exec {
				pids := childPIDs(t, cmd.Process.Pid)
				if len(pids) == 0 {
					t.Fatal("--redis exec: no redis-server child found")
				}
				stop = func(sig syscall.Signal) {
					for _, pid := range pids {
						_ = syscall.Kill(pid, sig) // gone once ratelab ends: nothing to resume
					}
				}
			}
			if !c.connecting {
				stop(syscall.SIGSTOP)
				defer stop(syscall.SIGCONT)
			}
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
			if took > ctrlCBound {
				t.Errorf("%s took %v to end after Ctrl-C with Redis stopped (contract: 1 s, bound with a loaded machine's margin: %v); stderr:\n%s",
					c.name, took, ctrlCBound, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != harness.ExitInterrupted {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, harness.ExitInterrupted, stderr.String())
			}
			if !c.exec && !c.connecting && !strings.Contains(stderr.String(), "may be left in Redis") {
				t.Errorf("stderr does not say which keys were left:\n%s", stderr.String())
			}
			if !c.results {
				return
			}
			names, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(names) != 1 || filepath.Base(names[0]) != "results.json" {
				t.Errorf("after Ctrl-C --out holds %v, want results.json alone", names)
			}
			if b, err := os.ReadFile(filepath.Join(out, "results.json")); err != nil || !strings.Contains(string(b), `"complete": false`) {
				t.Errorf("results.json not marked incomplete (%v)", err)
			}
			if !strings.Contains(stderr.String(), "results.json only: interrupted") {
				t.Errorf("stderr does not say only results.json was written:\n%s", stderr.String())
			}
		})
	}
}
