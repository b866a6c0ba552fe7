package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/server"
)

// processesWith lists the pids of the processes of program prog (argv[0]'s
// base name) whose command line holds all of words (read from /proc).
func processesWith(prog string, words ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(b), "\x00")
		if filepath.Base(argv[0]) != prog {
			continue
		}
		cmd := strings.Join(argv, " ")
		all := true
		for _, w := range words {
			all = all && strings.Contains(cmd, w)
		}
		if all {
			out = append(out, pid)
		}
	}
	return out
}

// guardUsers are the guards' ACL users on c.
func guardUsers(t *testing.T, c *redis.Client) []string {
	t.Helper()
	users, err := c.Do(context.Background(), "ACL", "USERS").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range users {
		if strings.HasPrefix(u, server.GuardUserPrefix) {
			out = append(out, u)
		}
	}
	return out
}

// kill -9 of a command on a URL Redis, then `ratelab
// clean --yes`: no guard ACL user, no access-check probe key, no run key
// and no redis-benchmark survives. Before, the guard's user stayed enabled
// with its password (clean ignored it) and redis-benchmark kept writing
// ~3 s after the kill.
func TestKillThenClean(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	script := writeFile(t, "counter.lua", `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if n <= tonumber(ARGV[2]) then return 1 end
return 0
`)
	cases := []struct {
		name  string
		args  []string
		ready func(v *victim, c *redis.Client) bool
	}{
		{"run --script under guard", []string{"run", "--script", script, "--arg", "{window_ms}", "--arg", "{limit}",
			"--algorithms", "fixed-window", "--clock", "redis", "--scenarios", "overload", "--window", "2s"},
			func(_ *victim, c *redis.Client) bool { return len(guardUsers(t, c)) > 0 }},
		{"verify --script under guard", []string{"verify", "--script", script, "--arg", "{window_ms}", "--arg", "{limit}",
			"--limit", "20", "--window", "2s"},
			func(_ *victim, c *redis.Client) bool { return len(guardUsers(t, c)) > 0 }},
		{"bench --compare-redis-benchmark", []string{"bench", "--algorithms", "sliding-log", "--compare-redis-benchmark", "--requests", "100000"},
			func(v *victim, _ *redis.Client) bool { return len(processesWith("redis-benchmark", v.port)) > 0 }},
		// the commands whose keys carry the limiter's own TTLs (at most
		// the window, here 1 min) or the run's marker
		{"capacity", []string{"capacity", "--algorithms", "sliding-log,fixed-window", "--limits", "1000", "--keys", "4000",
			"--budget", "400000", "--window", "1m"}, hasKeys},
		{"run --traffic (replay)", []string{"run", "--traffic", writeTraffic(t, 300000), "--limit", "10", "--window", "1m",
			"--algorithms", "sliding-log"}, hasKeys},
		{"demo", []string{"demo", "--limit", "50", "--window", "4s", "--pace", "4x"}, hasKeys},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := startVictim(t)
			c := v.client(t)
			url := "redis://" + v.addr
			cmd := exec.Command(bin, append(tc.args, "--redis", url)...)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			for deadline := time.Now().Add(90 * time.Second); !tc.ready(v, c); time.Sleep(10 * time.Millisecond) {
				select {
				case <-exited:
					t.Fatalf("ended before it could be killed: %s", stderr.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("not ready within 90 s: %s", stderr.String())
				}
			}
			_ = cmd.Process.Kill() // kill -9
			<-exited
			// what it started dies with it
			for deadline := time.Now().Add(time.Second); len(processesWith("redis-benchmark", v.port)) > 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("redis-benchmark still runs 1 s after bench was killed")
				}
			}
			// every key it left carries a TTL: the run's record that clean
			// reads, leftovers.RecordTTL; every other, at most the window plus
			// the run marker's margin (none here is longer than an hour)
			left, err := server.ScanKeys(context.Background(), c, server.KeyPrefix)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range left {
				bound := time.Hour
				if strings.HasSuffix(k, ":"+server.RecordSuffix) {
					bound = leftovers.RecordTTL
				}
				if ttl := c.PTTL(context.Background(), k).Val(); ttl < 0 && ttl != -2*time.Nanosecond || ttl > bound {
					t.Errorf("key %s left with TTL %v, want one of at most %v", k, ttl, bound)
				}
			}
			code, stdout, errOut := ratelab(t, "clean", "--redis", url, "--yes")
			if code != exitOK {
				t.Fatalf("clean --yes: exit %d: %s %s", code, stdout, errOut)
			}
			if u := guardUsers(t, c); len(u) != 0 {
				t.Errorf("ACL users left after clean --yes: %v; clean said:\n%s", u, stdout)
			}
			keys, err := server.ScanKeys(context.Background(), c, server.KeyPrefix)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 0 {
				t.Errorf("%d keys left after clean --yes, e.g. %v; clean said:\n%s", len(keys), keys[0], stdout)
			}
		})
	}
}

// hasKeys is ready once the command has written more than its registration
// and marker keys.
func hasKeys(_ *victim, c *redis.Client) bool {
	keys, _ := server.ScanKeys(context.Background(), c, server.KeyPrefix)
	return len(keys) > 2
}

// A kill -9 during the access check leaves its probe keys: they are under
// a run prefix of their own, each with a TTL, and clean --yes removes them
// (before: "ratelab:access-check:*" sets with no expiry, invisible to clean).
func TestCleanRemovesProbeKeys(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	ctx := context.Background()
	// what a CheckAccess killed mid-way leaves: probe keys, no marker, no record
	base := server.RunPrefix(server.NewRunID()) + server.AccessCheckInfix + "{p}:"
	c.ZAdd(ctx, base+"z", redis.Z{Score: 1, Member: "m"})
	c.PExpire(ctx, base+"z", time.Minute)
	c.Set(ctx, "users:1", "alice", 0)
	code, stdout, stderr := ratelab(t, "clean", "--redis", "redis://"+v.addr, "--yes")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if n := c.Exists(ctx, base+"z").Val(); n != 0 {
		t.Errorf("the probe key survived clean --yes: %s", stdout)
	}
	if c.Get(ctx, "users:1").Val() != "alice" {
		t.Error("clean touched a user's key")
	}
}

// on a user's Redis, an untrusted script is first tried
// on a throwaway redis-server (guard.ProbeScript): one that writes and
// then loops would leave the user's Redis answering BUSY to everyone, so
// it is refused before it reaches it; a well-behaved one runs.
func TestUntrustedScriptProbed(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	writesThenLoops := writeFile(t, "wedge.lua", `local n = redis.call('INCR', KEYS[1])
if n >= 2 then while true do end end
return 1
`)
	code, _, stderr := ratelab(t, "run", "--script", writesThenLoops, "--algorithms", "fixed-window", "--scenarios", "boundary-burst",
		"--redis", "redis://"+v.addr, "--out", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "--script") || !strings.Contains(stderr, "SCRIPT KILL cannot stop it") {
		t.Errorf("a script that writes and loops: exit %d, stderr %s", code, stderr)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Errorf("the user's Redis after the refusal: %v", err)
	}
	if keys, _ := server.ScanKeys(context.Background(), c, server.KeyPrefix); len(keys) != 0 {
		t.Errorf("keys written on the user's Redis: %v", keys)
	}
	if u := guardUsers(t, c); len(u) != 0 {
		t.Errorf("ACL users left: %v", u)
	}
	good := writeFile(t, "good.lua", `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if n <= tonumber(ARGV[2]) then return 1 end
return 0
`)
	code, _, stderr = ratelab(t, "run", "--script", good, "--arg", "{window_ms}", "--arg", "{limit}", "--algorithms", "fixed-window",
		"--scenarios", "boundary-burst", "--redis", "redis://"+v.addr, "--out", t.TempDir())
	if code != exitOK {
		t.Errorf("a well-behaved script: exit %d, stderr %s", code, stderr)
	}
}

// a Redis busy with another client's script at start is
// said plainly (before: Redis's own "You can only call SCRIPT KILL or
// SHUTDOWN NOSAVE", an invitation to kill someone else's work); ratelab
// sends no SCRIPT KILL and writes nothing.
func TestBusyAtStart(t *testing.T) {
	v := startVictim(t)
	c := redis.NewClient(&redis.Options{Addr: v.addr, ReadTimeout: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatal(err)
	}
	looping := make(chan error, 1)
	go func() { looping <- c.Eval(ctx, "while true do end", nil).Err() }()
	time.Sleep(300 * time.Millisecond) // past the threshold: BUSY to everyone
	code, _, stderr := ratelab(t, "run", "--scenarios", "steady", "--redis", "redis://"+v.addr, "--out", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "busy running another client's script") || strings.Contains(stderr, "SCRIPT KILL") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	select {
	case err := <-looping:
		t.Fatalf("the other client's script ended under ratelab: %v", err)
	default:
	}
	k := redis.NewClient(&redis.Options{Addr: v.addr})
	defer k.Close()
	if err := k.ScriptKill(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	<-looping
}
