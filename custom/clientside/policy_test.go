package clientside_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/usercmd"
)

// TestRefusedCommands: a command the policy on a user's commands refuses
// (usercmd.Check) never reaches Redis, however the script sends it (call,
// pcall caught, pipeline, transaction), and Run returns the refusal naming
// it; the server's Functions and keys stay as they were and its command
// counters show no such command arrived.
func TestRefusedCommands(t *testing.T) {
	c := srv.Client()
	k := srv.Key(t)
	lib := "#!lua name=usercmdlib\nredis.register_function('usercmdfn', function() return 'user' end)"
	if err := c.Do(ctx, "FUNCTION", "LOAD", "REPLACE", lib).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Do(ctx, "FUNCTION", "DELETE", "usercmdlib").Err() })
	if err := c.Set(ctx, k+":user", "alice", 0).Err(); err != nil {
		t.Fatal(err)
	}
	attacker := `"#!lua name=usercmdlib\nredis.register_function('usercmdfn', function() return 'attacker' end)"`
	cases := []struct {
		name, src, named string
	}{
		{"FUNCTION LOAD", `redis.call('FUNCTION', 'LOAD', 'REPLACE', ` + attacker + `) return 1`, "FUNCTION LOAD"},
		{"FUNCTION DELETE in pcall", `redis.pcall('FUNCTION', 'DELETE', 'usercmdlib') return 1`, "FUNCTION DELETE"},
		{"FUNCTION FLUSH caught by pcall", `pcall(redis.call, 'FUNCTION', 'FLUSH') return 1`, "FUNCTION FLUSH"},
		{"SCRIPT FLUSH in a pipeline", `redis.pipeline({{'GET', KEYS[1]}, {'SCRIPT', 'FLUSH'}}) return 1`, "SCRIPT FLUSH"},
		{"FUNCTION RESTORE in a transaction", `redis.transaction({{'FUNCTION', 'RESTORE', 'x'}}) return 1`, "FUNCTION RESTORE"},
		{"AUTH then SET", `redis.call('AUTH', 'default', 'pw') redis.call('SET', KEYS[1]..':user', 'owned') return 1`, "AUTH"},
		{"HELLO AUTH", `redis.call('HELLO', '2', 'AUTH', 'default', 'pw') return 1`, "HELLO AUTH"},
		{"RESET", `redis.call('RESET') redis.call('SET', KEYS[1]..':user', 'owned') return 1`, "RESET"},
		{"SCAN", `return redis.call('SCAN', '0')[2]`, "SCAN"},
		{"RANDOMKEY", `return redis.call('RANDOMKEY')`, "RANDOMKEY"},
		{"KEYS", `return redis.call('KEYS', '*')`, "KEYS"},
	}
	stats := func() map[string]string {
		info := c.Info(ctx, "commandstats").Val()
		out := map[string]string{}
		for _, line := range strings.Split(info, "\r\n") {
			for _, cmd := range []string{"function", "auth", "hello", "reset", "scan", "randomkey", "keys"} {
				if strings.HasPrefix(line, "cmdstat_"+cmd+":") || strings.HasPrefix(line, "cmdstat_"+cmd+"|") {
					out[line[:strings.Index(line, ":")]] = line
				}
			}
		}
		return out
	}
	dump := func() string { return c.Do(ctx, "FUNCTION", "DUMP").Val().(string) }
	beforeStats, beforeDump := stats(), dump()
	for i, cs := range cases {
		var rounds []*clientside.Round
		gated := 0
		e := &clientside.Exec{Rounds: &rounds, Gate: func(_ context.Context, r *clientside.Round) error {
			gated++
			return nil
		}}
		_, err := run(t, e, cs.src, []string{k}, []string{strconv.Itoa(i)})
		var ref *usercmd.Refusal
		if !errors.As(err, &ref) || ref.Command != cs.named || !strings.Contains(err.Error(), "test called "+cs.named+": not allowed (it ") {
			t.Errorf("%s: %v, want a refusal naming %s", cs.name, err, cs.named)
		}
		for _, r := range rounds {
			for _, cmd := range r.Commands {
				if usercmd.Check(cmd) != nil {
					t.Errorf("%s: round %v went to the gate and the log", cs.name, r.Commands)
				}
			}
		}
		if gated != len(rounds) {
			t.Errorf("%s: %d rounds gated, %d logged", cs.name, gated, len(rounds))
		}
	}
	if got := c.Get(ctx, k+":user").Val(); got != "alice" {
		t.Errorf("the user's key is %q", got)
	}
	if dump() != beforeDump {
		t.Error("FUNCTION DUMP changed")
	}
	if got := c.Do(ctx, "FCALL", "usercmdfn", "0").Val(); got != "user" {
		t.Errorf("FCALL usercmdfn answered %v", got)
	}
	after := stats()
	for k, v := range after {
		if k != "cmdstat_function|dump" && beforeStats[k] != v { // the test's own DUMPs aside
			t.Errorf("%s reached Redis: %s, was %q", k, v, beforeStats[k])
		}
	}
	// allowed: SCRIPT LOAD, EVALSHA and FCALL of the user's function
	_, err := run(t, &clientside.Exec{}, `local sha = redis.call('SCRIPT', 'LOAD', 'return 7')
if redis.call('SCRIPT', 'EXISTS', sha)[1] ~= 1 then return 0 end
return redis.call('EVALSHA', sha, 0) + (redis.call('FCALL', 'usercmdfn', 0) == 'user' and 1 or 0)`, []string{k}, nil)
	if err != nil {
		t.Errorf("SCRIPT LOAD, EVALSHA, FCALL: %v", err)
	}
}
