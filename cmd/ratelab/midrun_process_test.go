//go:build process

package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/server"
)

// Redis out of memory, turned into a replica, or
// closing the command's connections (CLIENT KILL from a second connection)
// while run, verify, replay, capacity or bench runs: the error names that
// state (before: EXECABORT, EOF, "every decision failed", or "the
// command's keys were removed" when the marker could not be refreshed), or
// the command goes on (capacity and bench reconnected where they died on
// one CLIENT KILL). Each fault is made on a real redis-server by a second
// client, about a second into the command.
func TestMidRunStateNamed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("about a minute of commands against faulty servers")
	}
	traffic := writeTraffic(t, 300000)
	commands := map[string]func(url, out string) []string{
		"run": func(url, out string) []string {
			return []string{"run", "--redis", url, "--clock", "client", "--scenarios", "overload", "--algorithms", "sliding-log", "--window", "1s", "--out", out, "--format", "csv"}
		},
		"verify": func(url, _ string) []string {
			return []string{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "50", "--window", "3s", "--real-time"}
		},
		"replay": func(url, out string) []string {
			return []string{"run", "--redis", url, "--traffic", traffic, "--limit", "10", "--window", "1s", "--algorithms", "sliding-log", "--out", out, "--format", "csv"}
		},
		"capacity": func(url, out string) []string {
			return []string{"capacity", "--redis", url, "--algorithms", "sliding-log", "--limits", "1000", "--keys", "4000", "--budget", "400000", "--out", out, "--format", "csv"}
		},
		"bench": func(url, out string) []string {
			return []string{"bench", "--redis", url, "--algorithms", "sliding-log", "--duration", "3s", "--clients", "4", "--paths", "allow", "--out", out, "--format", "csv"}
		},
	}
	readOnly := func(c *redis.Client) error { return c.Do(context.Background(), "REPLICAOF", "127.0.0.1", "1").Err() }
	oom := func(c *redis.Client) error { return c.ConfigSet(context.Background(), "maxmemory", "100000").Err() }
	kill := func(c *redis.Client) error {
		for range 3 { // three times, 300 ms apart: every connection of the command dies
			if err := c.Do(context.Background(), "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	}
	never := []string{"EXECABORT", "every decision failed", "keys were removed", "panic", "goroutine "}
	cases := []struct {
		cmd, fault string
		do         func(*redis.Client) error
		exit       int    // wanted; -1: 0 or 2
		msg        string // in stderr when the exit is 2
	}{
		{"run", "READONLY", readOnly, exitUsage, "Redis became a read-only replica of 127.0.0.1:1"},
		{"verify", "READONLY", readOnly, exitUsage, "Redis became a read-only replica"},
		{"replay", "READONLY", readOnly, exitUsage, "Redis became a read-only replica"},
		{"capacity", "READONLY", readOnly, exitUsage, "Redis became a read-only replica"},
		{"bench", "READONLY", readOnly, exitUsage, "Redis became a read-only replica"},
		// a script that already wrote may go on writing out of memory: run,
		// replay and bench may finish; whatever stops is named
		{"run", "OOM", oom, -1, "Redis is out of memory (maxmemory 100000 B reached, policy noeviction)"},
		// a full log denies without a refused write (ZREMRANGEBYSCORE, ZCARD
		// and ZRANGE run at maxmemory): a verify whose calls after the fault
		// were all denials got every answer and may end with its verdict
		{"verify", "OOM", oom, -1, "Redis is out of memory (maxmemory 100000 B reached, policy noeviction)"},
		{"replay", "OOM", oom, -1, "Redis is out of memory (maxmemory 100000 B reached, policy noeviction)"},
		{"capacity", "OOM", oom, exitUsage, "Redis is out of memory (maxmemory 100000 B reached, policy noeviction)"},
		{"bench", "OOM", oom, -1, "Redis is out of memory (maxmemory 100000 B reached, policy noeviction)"},
		// capacity and bench reconnect (before: exit 2, "sliding-log: EOF")
		{"capacity", "CLIENT KILL", kill, exitOK, ""},
		{"bench", "CLIENT KILL", kill, exitOK, ""},
		{"run", "CLIENT KILL", kill, -1, "the connection was closed by the server (CLIENT KILL"},
		{"replay", "CLIENT KILL", kill, -1, "the connection was closed by the server (CLIENT KILL"},
	}
	for _, tc := range cases {
		t.Run(tc.cmd+" "+tc.fault, func(t *testing.T) {
			v := startVictim(t)
			c := v.client(t)
			ch := runAsync(commands[tc.cmd]("redis://"+v.addr, filepath.Join(t.TempDir(), "out"))...)
			// into the command's writes: its keys are there
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if keys, _ := server.ScanKeys(context.Background(), c, server.KeyPrefix); len(keys) > 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the command wrote no key within 30 s")
				}
			}
			time.Sleep(500 * time.Millisecond)
			if err := tc.do(c); err != nil {
				t.Fatal(err)
			}
			var r runResult
			select {
			case r = <-ch:
			case <-time.After(60 * time.Second):
				t.Fatal("the command did not end within 60 s of the fault")
			}
			for _, s := range never {
				if strings.Contains(r.stderr, s) {
					t.Errorf("stderr says %q: %s", s, r.stderr)
				}
			}
			switch {
			case tc.exit >= 0 && r.code != tc.exit, r.code != exitOK && r.code != exitUsage:
				t.Fatalf("exit %d, want %d; stderr: %s", r.code, tc.exit, r.stderr)
			case r.code == exitUsage && !strings.Contains(r.stderr, tc.msg):
				t.Errorf("exit 2 without naming the cause %q: %s", tc.msg, r.stderr)
			case r.code == exitUsage && !strings.Contains(lastLine(r.stderr), tc.msg):
				// before: capacity's fill workers each added the raw error on a line of its own
				t.Errorf("the cause is not stderr's last line: %s", r.stderr)
			}
			t.Logf("exit %d: %s", r.code, lastLine(r.stderr))
		})
	}
}

// kill -9 of a virtual-time verify whose limiter gives its
// keys TTLs far longer than the window (a fixed window of 24 h sets 48 h):
// every key left has a real TTL within the stated bound, the safety TTL
// (10 min + twice the command's life + the window), not 48 h past it. The
// run's record (~run) is clean's, kept 30 days by design.
func TestKillLeavesBoundedTTLs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	v := startVictim(t)
	c := v.client(t)
	const window = 24 * time.Hour
	cmd := exec.Command(bin, "verify", "--redis", "redis://"+v.addr, "--algorithm", "fixed-window", "--limit", "50", "--window", "24h")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// the TTL emulation is at work once a companion hash is there
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if keys, _ := c.Keys(context.Background(), server.KeyPrefix+"*~vt{*").Result(); len(keys) > 20 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no companion hash within 60 s")
		}
	}
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Kill() // kill -9
	_ = cmd.Wait()
	life := time.Since(start)
	bound := 10*time.Minute + 2*life + window
	keys, err := server.ScanKeys(context.Background(), c, server.KeyPrefix)
	if err != nil || len(keys) == 0 {
		t.Fatalf("%d keys left (%v): the kill came too late to test", len(keys), err)
	}
	longest := time.Duration(0)
	for _, k := range keys {
		if strings.HasSuffix(k, ":"+server.RecordSuffix) {
			continue
		}
		ttl := c.PTTL(context.Background(), k).Val()
		if ttl < 0 {
			t.Errorf("%s has no TTL (%v)", k, ttl)
		}
		if ttl > bound {
			t.Errorf("%s has a real TTL of %v, past the bound %v", k, ttl.Round(time.Minute), bound.Round(time.Minute))
		}
		longest = max(longest, ttl)
	}
	t.Logf("%d keys, the longest TTL %v, bound %v", len(keys), longest.Round(time.Second), bound.Round(time.Second))
}

// a run suspended (SIGSTOP, as Ctrl-Z) longer than its
// marker's TTL, with `clean --yes` run meanwhile, goes on once resumed: clean
// skips the live run's keys, and the run does not take its own marker's
// expiry for keys removed by someone else. Before, it ended with exit 2,
// "the command's keys were removed from Redis ... (FLUSHALL, FLUSHDB,
// UNLINK or an eviction by someone else)", its keys all there.
func TestSuspendedRunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	v := startVictim(t)
	c := v.client(t)
	url := "redis://" + v.addr
	// bursts 2 s apart (boundary-burst at W = 10 s: 50 requests over 50 ms
	// at -1 s, 50 at +1 s), stopped in the silence between them: a call
	// in flight when the process stops times out when it resumes (its
	// read deadline passed meanwhile), a failed call (exit 2) that is
	// not what this tests
	cmd := exec.Command(bin, "run", "--redis", url, "--clock", "client", "--scenarios", "boundary-burst", "--algorithms", "sliding-log",
		"--window", "10s", "--out", filepath.Join(t.TempDir(), "out"), "--format", "csv")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// stopped once the run is registered (its marker there) with keys of
	// its own: the open's permission probe writes keys of its own before
	// that, and a run stopped mid-probe is not what this tests (under load,
	// a read in flight then timed out on resuming)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		keys, _ := server.ScanKeys(context.Background(), c, server.KeyPrefix)
		if len(keys) > 2 && slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, server.MarkerSuffix) }) {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no key within 30 s: %s", stderr.String())
		}
	}
	time.Sleep(300 * time.Millisecond) // the first burst is over
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(leftovers.DefaultTTL + time.Second)
	code, stdout, _ := ratelab(t, "clean", "--redis", url, "--yes")
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !strings.Contains(stdout, "live run") || !strings.Contains(stdout, "removed 0 keys") {
		t.Errorf("clean --yes during the suspended run: exit %d: %s", code, stdout)
	}
	if got := cmd.ProcessState.ExitCode(); got != exitOK {
		t.Errorf("the resumed run: exit %d, want 0: %s", got, stderr.String())
	}
}
