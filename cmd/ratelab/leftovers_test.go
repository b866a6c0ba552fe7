package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
