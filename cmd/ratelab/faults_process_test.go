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

func TestFaults(t *testing.T) {
	cases := []struct {
		name     string
		extra    []string
		fault    func(t *testing.T, v *victim)
		wantCode int
		check    func(t *testing.T, res *measure.Results, decisions, errs int)
		stderr   string // in stderr, when set
	}{
		{
			name: "kill -9 mid-run",
			fault: func(t *testing.T, v *victim) {
				v.signal(t, syscall.SIGKILL)
			},
			wantCode: exitUsage,
			check: func(t *testing.T, res *measure.Results, n, errs int) {
				if res.Complete || !strings.Contains(res.Error, "Redis kept failing") {
					t.Errorf("complete %v error %q", res.Complete, res.Error)
				}
			},
		},
		{
			name: "SIGSTOP longer than --timeout",
			fault: func(t *testing.T, v *victim) {
				v.signal(t, syscall.SIGSTOP)
			},
			wantCode: exitUsage,
			check: func(t *testing.T, res *measure.Results, n, errs int) {
				if res.Complete || errs == 0 {
					t.Errorf("complete %v, %d errors", res.Complete, errs)
				}
			},
			// the keys a hanging Redis keeps are named, with the command that removes them
			stderr: "remove them now with: ratelab clean --redis <the same --redis URL> --run ",
		},
		{
			name: "SCRIPT FLUSH mid-run costs nothing",
			fault: func(t *testing.T, v *victim) {
				c := v.client(t)
				for i := 0; i < 5; i++ {
					if err := c.ScriptFlush(context.Background()).Err(); err != nil {
						t.Error(err)
					}
					time.Sleep(300 * time.Millisecond)
				}
			},
			wantCode: exitOK,
			check: func(t *testing.T, res *measure.Results, n, errs int) {
				if !res.Complete || errs != 0 || n != 1500 {
					t.Errorf("complete %v, %d errors, %d decisions; want complete, 0, 1500", res.Complete, errs, n)
				}
			},
		},
		{
			// the restart wiped the run's keys and scripts:
			// no complete result from it (before: exit 0, complete)
			name:  "restart on the same port: stopped, the restart named",
			extra: []string{"--on-error", "fail-open"},
			fault: func(t *testing.T, v *victim) {
				v.signal(t, syscall.SIGKILL)
				time.Sleep(time.Second) // longer than --timeout, shorter than --max-outage
				v.start(t)
			},
			wantCode: exitUsage,
			check: func(t *testing.T, res *measure.Results, n, errs int) {
				var errors, open int64
				for _, r := range res.Results {
					errors += r.Errors
					open += r.FailedOpen
				}
				if res.Complete || !strings.Contains(res.Error, "restarted while the command ran") || errors == 0 || open != errors || int(errors) != errs {
					t.Errorf("complete %v, error %q, %d decisions, errors %d (jsonl %d), failed open %d", res.Complete, res.Error, n, errors, errs, open)
				}
			},
			stderr: "restarted while the command ran",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := startVictim(t)
			out := t.TempDir()
			ch := runAsync(overloadArgs(v.addr, out, c.extra...)...)
			time.Sleep(1500 * time.Millisecond) // into the scenario (the first 300 ms are the lead)
			faultAt := time.Now()
			c.fault(t, v)
			var r runResult
			select {
			case r = <-ch:
			case <-time.After(60 * time.Second): // detects a hang only: the bound is checked below
				t.Fatal("ratelab hung")
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
				t.Fatalf("panic: %s", r.stderr)
			}
			if r.code != c.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, c.wantCode, r.stderr)
			}
			if !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stderr does not say %q: %s", c.stderr, r.stderr)
			}
			res, err := measure.ReadResults(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			if c.wantCode == exitUsage {
				// the run itself (before its results are rendered) stopped within
				// --max-outage (2s) plus one --timeout (500ms), the last look at
				// the server (2 x 200ms) and the cleanup (1s), with 2 s of room
				// for a loaded machine: a hang is bounded, not timed
				stopped := res.StartedAt.Add(time.Duration(res.DurationMS) * time.Millisecond)
				if d := stopped.Sub(faultAt); d > 6*time.Second {
					t.Errorf("the run stopped %v after the fault (exit %v after it)", d, time.Since(faultAt))
				}
			}
			n, errs := readDecisions(t, filepath.Join(out, "decisions.jsonl"))
			var requests int64
			for _, row := range res.Results {
				requests += row.Requests
			}
			if int64(n) != requests {
				t.Errorf("decisions.jsonl has %d records, results count %d requests", n, requests)
			}
			c.check(t, res, n, errs)
		})
	}
}

// verify against a Redis that hangs mid-way stops with exit 2, never a
// verdict, instead of holding the CI job.
func TestVerifyRedisHangs(t *testing.T) {
	v := startVictim(t)
	// --real-time: verify is virtual by default (done in well under a
	// second at 3s); the wall-clock families keep it running
	ch := runAsync("verify", "--redis", "redis://"+v.addr, "--algorithm", "sliding-log", "--limit", "50", "--window", "3s", "--real-time")
	time.Sleep(700 * time.Millisecond)
	stopped := time.Now()
	v.signal(t, syscall.SIGSTOP)
	var r runResult
	select {
	case r = <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("verify hung on a stopped Redis")
	}
	t.Logf("verify exited %v after SIGSTOP", time.Since(stopped).Round(time.Millisecond))
	// the virtual-time trials stop on the first stalled call, the
	// real-time ones once calls kept failing for --max-outage
	if r.code != exitUsage || !strings.Contains(r.stderr, "Redis kept failing") && !strings.Contains(r.stderr, "did not answer a call within") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the outage", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "HOLDS") || strings.Contains(r.stdout, "VIOLATED") {
		t.Errorf("a verdict was printed: %s", r.stdout)
	}
}
