//go:build process

package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/measure"
)

// a Redis restart, a FLUSHALL and a SIGSTOP longer than
// the call timeout during a verify and during a replay: exit 2 naming the
// cause, no verdict, results marked incomplete. Before, the correct
// sliding-log was called VIOLATED after a FLUSHALL (exit 1), a replay across
// a restart exited 0 with complete: true and most decisions failed.
func TestBrokenEnvironment(t *testing.T) {
	t.Parallel()
	traffic := writeTraffic(t, 400000)
	faults := []struct {
		name  string
		do    func(t *testing.T, v *victim)
		cause string // in stderr
	}{
		{"restart", func(t *testing.T, v *victim) {
			v.signal(t, syscall.SIGKILL)
			v.start(t) // same port, empty, a new run_id
		}, "restarted while the command ran"},
		{"FLUSHALL", func(t *testing.T, v *victim) {
			c := v.client(t)
			if err := c.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}, "keys were removed from Redis"},
		{"SIGSTOP longer than --timeout", func(t *testing.T, v *victim) {
			// stopped until the command has ended: the call bound adapts to
			// the round trips seen (up to 50x the typical one), so on a
			// loaded machine any fixed pause could end within it (the
			// victim's cleanup sends SIGCONT)
			v.signal(t, syscall.SIGSTOP)
		}, "did not answer a call within "},
	}
	commands := []struct {
		name  string
		args  []string
		ready string // a line of stderr once the command is at work
	}{
		{"verify", []string{"verify", "--algorithm", "sliding-log", "--limit", "2000", "--window", "1h"}, "virtual-time trials"},
		{"replay", []string{"run", "--traffic", traffic, "--limit", "10", "--window", "1s", "--format", "json"}, "replaying"},
	}
	for _, cmd := range commands {
		for _, f := range faults {
			t.Run(cmd.name+"/"+f.name, func(t *testing.T) {
				v := startVictim(t)
				out := t.TempDir()
				args := append(cmd.args, "--redis", "redis://"+v.addr, "--out", out, "--force")
				if strings.HasPrefix(f.name, "SIGSTOP") {
					args = append(args, "--timeout", "1s")
				}
				var stdout strings.Builder
				var stderr syncBuffer
				done := make(chan int, 1)
				go func() { done <- Main(args, &stdout, &stderr) }()
				// wall-clock bounds here only detect a hang
				for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(stderr.String(), cmd.ready); {
					if time.Now().After(deadline) {
						t.Fatalf("not started within 2 min: %s", stderr.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond) // into the work
				select {
				case code := <-done:
					t.Fatalf("%s ended (exit %d) before the fault: make its work longer; stderr %s", cmd.name, code, stderr.String())
				default:
				}
				f.do(t, v)
				faulted := time.Now()
				var code int
				select {
				case code = <-done:
					t.Logf("%s exited %v after the fault", cmd.name, time.Since(faulted).Round(time.Millisecond))
				case <-time.After(2 * time.Minute):
					t.Fatalf("%s hung after the fault: %s", cmd.name, stderr.String())
				}
				if code != exitUsage || !strings.Contains(stderr.String(), f.cause) {
					t.Errorf("exit %d, want 2 naming %q; stderr:\n%s", code, f.cause, stderr.String())
				}
				for _, verdict := range []string{"HOLDS", "VIOLATED", "COUNTER-EXAMPLE"} {
					if strings.Contains(stdout.String(), verdict) {
						t.Errorf("a verdict from a broken environment: %s", stdout.String())
					}
				}
				if cmd.name == "replay" {
					res, err := measure.ReadResults(filepath.Join(out, "results.json"))
					if err != nil {
						t.Fatal(err)
					}
					if res.Complete || !strings.Contains(res.Error, f.cause) {
						t.Errorf("results.json: complete %v, error %q", res.Complete, res.Error)
					}
				} else {
					rep, err := measure.ReadVerify(filepath.Join(out, "verify.json"))
					if err != nil {
						t.Fatal(err)
					}
					if rep.Complete || !strings.Contains(rep.Error, f.cause) {
						t.Errorf("verify.json: complete %v, error %q", rep.Complete, rep.Error)
					}
				}
			})
		}
	}
}
