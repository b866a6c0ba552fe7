package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// userLib is the user's own Function library on the victim: FCALL userfn
// answers "user".
const userLib = "#!lua name=userlib\nredis.register_function('userfn', function() return 'user' end)"

// A fixed window, the body every attack script below ends with, so that a
// command let through leaves a limiter that verify gives a verdict on.
const fixedWindowBody = `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if n <= tonumber(ARGV[2]) then return 1 end
return 0
`

// The commands of a user's script, client-side (each a real command from
// ratelab) or server-side (under the guard's ACL user), on a user's Redis
// holding keys, a password, a Function library and a cached script: a
// script that replaces or deletes the Functions, flushes the scripts,
// logs in as the default user and writes, or lists the keys, is refused
// with exit 2 naming the command before it reaches the Redis; the keys,
// FUNCTION DUMP and the script cache stay as they were, FCALL userfn
// answers the user's value, and no user key name reaches the output.
func TestUserCommandsRefused(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	ctx := context.Background()
	admin := v.client(t)
	if err := admin.ConfigSet(ctx, "requirepass", "sekret").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: v.addr, Password: "sekret"})
	t.Cleanup(func() { _ = c.Close() })
	fillForeign(t, c, 300)
	if err := c.Do(ctx, "FUNCTION", "LOAD", userLib).Err(); err != nil {
		t.Fatal(err)
	}
	userSHA, err := c.ScriptLoad(ctx, "return 'user script'").Result()
	if err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, c)
	dumpBefore, err := c.Do(ctx, "FUNCTION", "DUMP").Text()
	if err != nil {
		t.Fatal(err)
	}
	url := "redis://:sekret@" + v.addr
	dir := t.TempDir()
	attacker := `"#!lua name=userlib\nredis.register_function('userfn', function() return 'attacker' end)"`
	cases := []struct {
		name, attack, named string
		clientSide          bool
	}{
		// row 1
		{"FUNCTION LOAD REPLACE", "redis.call('FUNCTION', 'LOAD', 'REPLACE', " + attacker + ")", "FUNCTION LOAD", true},
		{"FUNCTION FLUSH", "redis.call('FUNCTION', 'FLUSH')", "FUNCTION FLUSH", true},
		{"FUNCTION DELETE", "redis.call('FUNCTION', 'DELETE', 'userlib')", "FUNCTION DELETE", true},
		{"SCRIPT FLUSH", "redis.call('SCRIPT', 'FLUSH')", "SCRIPT FLUSH", true},
		// row 2
		{"AUTH then SET", "redis.call('AUTH', 'default', 'sekret') redis.call('SET', 'app:0', 'owned')", "AUTH", true},
		// row 14
		{"SCAN", "local r = redis.call('SCAN', '0', 'COUNT', '1000') if #r[2] > 0 then return r[2] end", "SCAN", true},
		{"RANDOMKEY", "local k = redis.call('RANDOMKEY') if k then return k end", "RANDOMKEY", true},
		{"KEYS", "local k = redis.call('KEYS', 'app:*') if #k > 0 then return k end", "KEYS", true},
		{"SCAN", "local r = redis.call('SCAN', '0', 'COUNT', '1000') if #r[2] > 0 then return r[2] end", "SCAN", false},
		{"RANDOMKEY", "local k = redis.call('RANDOMKEY') if k then return k end", "RANDOMKEY", false},
	}
	for i, tc := range cases {
		script := filepath.Join(dir, strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")+".lua")
		if err := os.WriteFile(script, []byte(tc.attack+"\n"+fixedWindowBody), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"verify", "--script", script, "--arg", "{window_ms}", "--arg", "{limit}", "--limit", "10", "--window", "1s",
			"--redis", url, "--out", filepath.Join(dir, "out", string(rune('a'+i)))}
		side := "server-side"
		if tc.clientSide {
			args, side = append(args, "--client-side"), "client-side"
		}
		code, stdout, stderr := ratelab(t, args...)
		if code != exitUsage || !strings.Contains(stderr, tc.named) {
			t.Errorf("%s %s: exit %d, stderr %q; want exit %d naming %s", side, tc.name, code, lastLine(stderr), exitUsage, tc.named)
		}
		if tc.clientSide && !strings.Contains(stderr, "called "+tc.named+": not allowed (it ") {
			t.Errorf("%s %s: stderr %q; want the refusal with its reason", side, tc.name, lastLine(stderr))
		}
		if strings.Contains(stdout+stderr, "app:") {
			t.Errorf("%s %s: a user key name in ratelab's output:\n%s%s", side, tc.name, stdout, stderr)
		}
		compareSnapshots(t, side+" "+tc.name, before, takeSnapshot(t, c))
		if d, _ := c.Do(ctx, "FUNCTION", "DUMP").Text(); d != dumpBefore {
			t.Errorf("%s %s: FUNCTION DUMP changed", side, tc.name)
		}
		if got, err := c.Do(ctx, "FCALL", "userfn", "0").Text(); got != "user" {
			t.Errorf("%s %s: FCALL userfn answered %q (%v), want the user's", side, tc.name, got, err)
		}
		if ok, _ := c.ScriptExists(ctx, userSHA).Result(); len(ok) != 1 || !ok[0] {
			t.Errorf("%s %s: the user's cached script is gone", side, tc.name)
		}
		// put back what an attack let through, so that the next one is judged alone
		_ = c.Do(ctx, "FUNCTION", "LOAD", "REPLACE", userLib).Err()
		_ = c.ScriptLoad(ctx, "return 'user script'").Err()
		if v := before["app:0"]; c.Get(ctx, "app:0").Val() != "value-0" {
			_ = c.Do(ctx, "RESTORE", "app:0", 0, v.dump, "REPLACE").Err()
		}
	}
}
