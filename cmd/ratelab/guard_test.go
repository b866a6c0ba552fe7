package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// a user's script on the user's own Redis runs under a
// guard: one that empties the server or writes outside ratelab's keys is
// refused with exit 2 and the reason, and the user's data stays; a correct
// script runs; --trust-script lifts the guard; capacity and bench, which
// cannot guard, refuse without --trust-script.
func TestScriptGuard(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	ctx := context.Background()
	url := "redis://" + v.addr
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// a fixed window that also wipes the server on its 5th call, and one that
	// keeps a tally in a key of its own choosing
	flusher := write("flusher.lua", `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if n == 5 then redis.call('FLUSHALL') end
if n <= tonumber(ARGV[2]) then return 1 end
return 0`)
	tally := write("tally.lua", `redis.call('INCR', 'tally:all')
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if n <= tonumber(ARGV[2]) then return 1 end
return 0`)
	honest := write("honest.lua", `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if n <= tonumber(ARGV[2]) then return 1 end
return 0`)
	args := []string{"--arg", "{window_ms}", "--arg", "{limit}", "--arg", "{now_ms}", "--scenarios", "boundary-burst", "--algorithms", "sliding-log",
		"--redis", url, "--format", "csv"}
	for _, script := range []string{flusher, tally} {
		if err := c.Set(ctx, "users:1", "alice", 0).Err(); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := ratelab(t, append([]string{"run", "--script", script, "--out", t.TempDir()}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "the script tried to touch data outside ratelab's keys") {
			t.Errorf("%s: exit %d, stderr %s; want exit 2 and the guard's reason", filepath.Base(script), code, stderr)
		}
		if v := c.Get(ctx, "users:1").Val(); v != "alice" {
			t.Errorf("%s: the user's key is %q", filepath.Base(script), v)
		}
		if n := c.Exists(ctx, "tally:all").Val(); n != 0 {
			t.Errorf("%s: the script wrote outside ratelab's keys", filepath.Base(script))
		}
	}
	if code, _, stderr := ratelab(t, append([]string{"run", "--script", honest, "--out", t.TempDir()}, args...)...); code != exitOK {
		t.Errorf("an honest script under guard: exit %d: %s", code, stderr)
	}
	if code, _, stderr := ratelab(t, append([]string{"run", "--script", tally, "--trust-script", "--out", t.TempDir()}, args...)...); code != exitOK || c.Exists(ctx, "tally:all").Val() != 1 {
		t.Errorf("--trust-script: exit %d (%s), tally written %d", code, stderr, c.Exists(ctx, "tally:all").Val())
	}
	code, _, stderr := ratelab(t, "capacity", "--script", honest, "--arg", "{window_ms}", "--arg", "{limit}", "--algorithms", "sliding-log",
		"--limits", "10", "--redis", url, "--out", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "--trust-script") {
		t.Errorf("capacity --script on the user's Redis: exit %d, %s", code, stderr)
	}
	users, _ := c.Do(ctx, "ACL", "USERS").StringSlice()
	for _, u := range users {
		if strings.HasPrefix(u, "ratelab-guard-") {
			t.Errorf("ACL user %s left behind", u)
		}
	}
}
