package usercmd_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/usercmd"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	_ = srv.Close()
	os.Exit(code)
}

// cases: every command the policy refuses by name, and the ones a limiter
// or a client library sends that it must let through. named is the
// command as a refusal names it ("" when allowed).
var cases = []struct {
	args  []string
	named string
	// goOnly: Redis's ACL does not check it; Check alone refuses it
	goOnly bool
}{
	// Functions: no change, no reading of the user's libraries
	{args: []string{"FUNCTION", "LOAD", "REPLACE", "#!lua name=x\nredis.register_function('f', function() return 1 end)"}, named: "FUNCTION LOAD"},
	{args: []string{"function", "delete", "userlib"}, named: "FUNCTION DELETE"},
	{args: []string{"FUNCTION", "FLUSH"}, named: "FUNCTION FLUSH"},
	{args: []string{"FUNCTION", "RESTORE", "x"}, named: "FUNCTION RESTORE"},
	{args: []string{"FUNCTION", "DUMP"}, named: "FUNCTION DUMP"},
	{args: []string{"FUNCTION", "LIST", "WITHCODE"}, named: "FUNCTION LIST"},
	{args: []string{"FUNCTION", "KILL"}, named: "FUNCTION KILL"},
	// scripts: load and ask, never flush, kill or debug
	{args: []string{"SCRIPT", "FLUSH"}, named: "SCRIPT FLUSH"},
	{args: []string{"Script", "Flush", "ASYNC"}, named: "SCRIPT FLUSH"},
	{args: []string{"SCRIPT", "KILL"}, named: "SCRIPT KILL"},
	{args: []string{"SCRIPT", "DEBUG", "SYNC"}, named: "SCRIPT DEBUG"},
	{args: []string{"SCRIPT", "LOAD", "return 1"}},
	{args: []string{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}},
	{args: []string{"EVAL", "return 1", "1", "ratelab:k"}},
	{args: []string{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}},
	{args: []string{"EVAL_RO", "return 1", "0"}},
	{args: []string{"FCALL", "userfn", "0"}},
	// logging in: AUTH, HELLO AUTH, RESET (back to the default user)
	{args: []string{"AUTH", "default", "secret"}, named: "AUTH", goOnly: true},
	{args: []string{"auth", "secret"}, named: "AUTH", goOnly: true},
	{args: []string{"HELLO", "3", "AUTH", "default", "secret"}, named: "HELLO AUTH", goOnly: true},
	{args: []string{"HELLO", "2", "SETNAME", "x", "auth", "default", "secret"}, named: "HELLO AUTH", goOnly: true},
	{args: []string{"RESET"}, named: "RESET", goOnly: true},
	{args: []string{"HELLO", "3"}},
	{args: []string{"HELLO", "2", "SETNAME", "auth"}},
	{args: []string{"HELLO"}},
	// other databases, every key
	{args: []string{"SELECT", "1"}, named: "SELECT"},
	{args: []string{"SWAPDB", "0", "1"}, named: "SWAPDB"},
	{args: []string{"MOVE", "ratelab:k", "1"}, named: "MOVE"},
	{args: []string{"MIGRATE", "127.0.0.1", "1", "ratelab:k", "0", "100", "AUTH", "x"}, named: "MIGRATE"},
	{args: []string{"COPY", "ratelab:a", "ratelab:b", "DB", "1"}, named: "COPY"},
	{args: []string{"FLUSHDB"}, named: "FLUSHDB"},
	{args: []string{"FLUSHALL", "ASYNC"}, named: "FLUSHALL"},
	// key names beyond the trial's
	{args: []string{"SCAN", "0"}, named: "SCAN"},
	{args: []string{"scan", "0", "MATCH", "ratelab:*"}, named: "SCAN"},
	{args: []string{"KEYS", "*"}, named: "KEYS"},
	{args: []string{"RANDOMKEY"}, named: "RANDOMKEY"},
	{args: []string{"CLUSTER", "GETKEYSINSLOT", "0", "10"}, named: "CLUSTER GETKEYSINSLOT"},
	{args: []string{"CLIENT", "TRACKING", "ON", "BCAST"}, named: "CLIENT TRACKING"},
	// the applications' channels
	{args: []string{"PUBLISH", "orders", "x"}, named: "PUBLISH"},
	{args: []string{"PSUBSCRIBE", "__keyspace@0__:*"}, named: "PSUBSCRIBE"},
	{args: []string{"PUBSUB", "CHANNELS"}, named: "PUBSUB CHANNELS"},
	// @admin and @dangerous
	{args: []string{"CONFIG", "SET", "maxmemory", "1"}, named: "CONFIG SET"},
	{args: []string{"CONFIG", "GET", "requirepass"}, named: "CONFIG GET"},
	{args: []string{"DEBUG", "SLEEP", "10"}, named: "DEBUG"},
	{args: []string{"SHUTDOWN", "NOSAVE"}, named: "SHUTDOWN"},
	{args: []string{"CLIENT", "KILL", "TYPE", "normal"}, named: "CLIENT KILL"},
	{args: []string{"CLIENT", "LIST"}, named: "CLIENT LIST"},
	{args: []string{"CLIENT", "PAUSE", "1000"}, named: "CLIENT PAUSE"},
	{args: []string{"ACL", "SETUSER", "x", "on"}, named: "ACL SETUSER"},
	{args: []string{"ACL", "LOG"}, named: "ACL LOG"},
	{args: []string{"MONITOR"}, named: "MONITOR"},
	{args: []string{"SLOWLOG", "GET"}, named: "SLOWLOG GET"},
	{args: []string{"REPLICAOF", "127.0.0.1", "1"}, named: "REPLICAOF"},
	{args: []string{"SORT", "ratelab:k", "BY", "app:*"}, named: "SORT"},
	{args: []string{"RESTORE", "ratelab:k", "0", "x"}, named: "RESTORE"},
	{args: []string{"MODULE", "LOAD", "/tmp/x.so"}, named: "MODULE LOAD"},
	{args: []string{"BGSAVE"}, named: "BGSAVE"},
	// what a limiter and a client library send
	{args: []string{"INFO", "server"}},
	{args: []string{"PING"}},
	{args: []string{"TIME"}},
	{args: []string{"GET", "ratelab:k"}},
	{args: []string{"INCRBY", "ratelab:k", "1"}},
	{args: []string{"PEXPIRE", "ratelab:k", "1000"}},
	{args: []string{"ZADD", "ratelab:z", "1", "m"}},
	{args: []string{"ZREMRANGEBYSCORE", "ratelab:z", "-inf", "1"}},
	{args: []string{"HINCRBY", "ratelab:h", "f", "1"}},
	{args: []string{"WATCH", "ratelab:k"}},
	{args: []string{"MULTI"}},
	{args: []string{"CLIENT", "SETNAME", "app"}},
	{args: []string{"CLIENT", "ID"}},
	{args: []string{"CLUSTER", "SLOTS"}},
	{args: []string{"COMMAND", "COUNT"}},
	{args: []string{"DBSIZE"}},
}

func TestCheck(t *testing.T) {
	for _, c := range cases {
		err := usercmd.Check(c.args)
		var r *usercmd.Refusal
		switch {
		case c.named == "" && err != nil:
			t.Errorf("%q: refused (%v), want allowed", c.args, err)
		case c.named != "" && !errors.As(err, &r):
			t.Errorf("%q: %v, want a refusal naming %s", c.args, err, c.named)
		case c.named != "" && (r.Command != c.named || !strings.HasPrefix(err.Error(), c.named+": not allowed (it ")):
			t.Errorf("%q: %q names %q, want %s", c.args, err, r.Command, c.named)
		}
	}
	// a word that is not a plain token is quoted in the name
	err := usercmd.Check([]string{"FUNCTION", "\x1b[2Jload\n"})
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\n") {
		t.Errorf("FUNCTION with escapes: %q", err)
	}
	if usercmd.Check(nil) != nil {
		t.Error("an empty command is refused; Redis answers it")
	}
}

// Every command and subcommand Redis files under @admin or @dangerous is
// refused by Check (but INFO), as by the ACL user's -@admin -@dangerous.
func TestCheckRefusesRedisCategories(t *testing.T) {
	ctx := context.Background()
	c := srv.Client()
	for _, cat := range []string{"admin", "dangerous"} {
		names, err := c.Do(ctx, "ACL", "CAT", cat).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if n == "info" {
				continue
			}
			if err := usercmd.Check(strings.Split(n, "|")); err == nil {
				t.Errorf("@%s %s: allowed", cat, n)
			}
		}
	}
}

// A user with ACLRules is refused by Redis (ACL DRYRUN) exactly what Check
// refuses, but the logins Redis's ACL does not check.
func TestACLRulesAgreeWithCheck(t *testing.T) {
	ctx := context.Background()
	c := srv.Client()
	args := []any{"ACL", "SETUSER", "usercmd-test", "reset", "on", ">pw", "~ratelab:*"}
	for _, r := range usercmd.ACLRules() {
		args = append(args, r)
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Do(context.Background(), "ACL", "DELUSER", "usercmd-test").Err() })
	for _, cs := range cases {
		if cs.goOnly {
			continue
		}
		dry := []any{"ACL", "DRYRUN", "usercmd-test"}
		for _, a := range cs.args {
			dry = append(dry, a)
		}
		// OK, or the reason as a bulk string
		said, err := c.Do(ctx, dry...).Text()
		switch {
		case err != nil || said != "OK" && !strings.Contains(said, "no permissions"):
			t.Errorf("%q: ACL DRYRUN: %q, %v", cs.args, said, err)
		case (said != "OK") != (cs.named != ""):
			t.Errorf("%q: Redis says %q, Check says %q", cs.args, said, cs.named)
		}
	}
}

// The policy is a leaf: every way a user's command reaches Redis can
// import it.
func TestLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/ratelab/ratelab/usercmd").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/") && dep != "github.com/ratelab/ratelab/usercmd" {
			t.Errorf("usercmd imports %s", dep)
		}
	}
}
