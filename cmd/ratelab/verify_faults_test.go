package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// In verify: the guard stops a script that
// empties the user's Redis; --out is never mixed; sizes are bounded; a
// verify that stops writes verify.json marked incomplete.
func TestVerifyKeepsTheUsersData(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "users:1", "alice", 0).Err(); err != nil {
		t.Fatal(err)
	}
	flusher := filepath.Join(t.TempDir(), "flusher.lua")
	if err := os.WriteFile(flusher, []byte(`local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if n == 3 then redis.call('FLUSHALL') end
if n <= tonumber(ARGV[2]) then return 1 end
return 0`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "v")
	code, _, stderr := ratelab(t, "verify", "--script", flusher, "--arg", "{window_ms}", "--arg", "{limit}", "--arg", "{now_ms}",
		"--limit", "10", "--window", "1s", "--redis", "redis://"+v.addr, "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "the script tried to touch data outside ratelab's keys") {
		t.Errorf("verify of a flushing script: exit %d, stderr %s", code, stderr)
	}
	if c.Get(ctx, "users:1").Val() != "alice" {
		t.Errorf("the user's key is gone")
	}
	// marked incomplete, with the header that reproduces it
	rep, err := measure.ReadVerify(filepath.Join(out, "verify.json"))
	if err != nil || rep.Complete || rep.Error == "" || rep.SchemaVersion != measure.SchemaVersion || rep.RunID == "" ||
		rep.Repro.Seed != 1 || len(rep.Repro.TargetSHA256) != 64 || rep.Redis.Version == "" {
		b, _ := os.ReadFile(filepath.Join(out, "verify.json"))
		t.Errorf("verify.json of a stopped verify: %v %s", err, b)
	}
	// the directory now holds results: not again without --force
	code, _, stderr = ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--redis", "redis://"+v.addr, "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "--out: ") || !strings.Contains(stderr, "--force") {
		t.Errorf("verify into a used --out: exit %d, %s", code, stderr)
	}
	if code, _, stderr = ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s", "--redis", "redis://"+v.addr, "--out", out, "--force"); code != exitOK {
		t.Errorf("verify --force: exit %d, %s", code, stderr)
	}
	for _, limit := range []string{"1000000", "1000000000000000000"} {
		code, _, stderr = ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", limit, "--window", "1s", "--redis", "redis://127.0.0.1:1")
		if code != exitUsage || !strings.Contains(stderr, "--limit: at most 100000") {
			t.Errorf("verify --limit %s: exit %d, %s", limit, code, stderr)
		}
	}
}

// a script that loops forever is stopped with SCRIPT KILL,
// and verify says so instead of "i/o timeout"; the user's Redis answers.
func TestVerifyKillsLoopingScript(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	loop := filepath.Join(t.TempDir(), "loop.lua")
	if err := os.WriteFile(loop, []byte("if tonumber(ARGV[1]) > 0 then while true do end end\nreturn 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := ratelab(t, "verify", "--script", loop, "--arg", "{now_ms}", "--limit", "5", "--window", "1s",
		"--redis", "redis://"+v.addr, "--trust-script")
	if code != exitUsage || !strings.Contains(stderr, "script ran longer than the call timeout: ratelab sent SCRIPT KILL") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Errorf("Redis after verify: %v", err)
	}
}
