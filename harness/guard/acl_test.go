package guard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// under the guard, a script can neither flush the server
// nor write outside ratelab's prefix: Redis answers NOPERM, and the user's
// keys are untouched. What a limiter needs still works.
func TestGuardRefusesWhatHarmsTheUser(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Open(t)
	c := rd.Client
	if err := c.Set(ctx, "users:1", "alice", 0).Err(); err != nil {
		t.Fatal(err)
	}
	prefix := "ratelab:20261123T090000-abcd:"
	g, err := guard.NewACL(ctx, rd, prefix)
	if err != nil {
		t.Fatal(err)
	}
	own := prefix + "{k}"
	cases := []struct {
		name, script string
		keys         []string
		refused      bool
	}{
		{"a limiter's own key", "redis.call('INCR', KEYS[1]); redis.call('PEXPIRE', KEYS[1], 1000); return redis.call('TIME')[1] and 1", []string{own}, false},
		{"FLUSHALL", "return redis.call('FLUSHALL')", []string{own}, true},
		{"FLUSHDB", "return redis.call('FLUSHDB')", []string{own}, true},
		{"a key outside KEYS and the prefix", "return redis.call('SET', 'users:1', 'mallory')", []string{own}, true},
		{"CONFIG SET", "return redis.call('CONFIG', 'SET', 'maxmemory', '1')", []string{own}, true},
		// nothing leaves the database cleanup scans
		{"SELECT 1 then write", "redis.call('SELECT', 1); for i = 1, 54 do redis.call('SET', KEYS[1] .. i, 1) end; return 1", []string{own}, true},
		{"SWAPDB", "return redis.call('SWAPDB', 0, 1)", []string{own}, true},
		{"MOVE", "redis.call('SET', KEYS[1], 1); return redis.call('MOVE', KEYS[1], 1)", []string{own}, true},
		{"COPY to another db", "redis.call('SET', KEYS[1], 1); return redis.call('COPY', KEYS[1], KEYS[1] .. 'x', 'DB', 1)", []string{own}, true},
		{"MIGRATE", "return redis.call('MIGRATE', '127.0.0.1', 1, KEYS[1], 0, 100)", []string{own}, true},
	}
	for _, tc := range cases {
		err := g.Client.Eval(ctx, tc.script, tc.keys).Err()
		switch {
		case !tc.refused && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.refused && !guard.IsRefusal(err):
			t.Errorf("%s: got %v, want the guard's refusal", tc.name, err)
		}
	}
	// a foreign key declared in KEYS: the EVAL itself is refused (NOPERM)
	if err := g.Client.Eval(ctx, "return redis.call('DEL', KEYS[1])", []string{"users:1"}).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("a foreign key in KEYS: %v, want NOPERM", err)
	}
	if n, err := c.Do(ctx, "EVAL", "redis.call('SELECT', 1); return redis.call('DBSIZE')", 0).Int64(); err != nil || n != 0 {
		t.Errorf("db 1 after the guarded scripts: %d keys (%v), want 0", n, err)
	}
	if v := c.Get(ctx, "users:1").Val(); v != "alice" {
		t.Errorf("the user's key is %q after the guarded scripts", v)
	}
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	users, err := c.Do(ctx, "ACL", "USERS").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if strings.HasPrefix(u, "ratelab-guard-") {
			t.Errorf("ACL user %s left behind", u)
		}
	}
}

// the guard denies SELECT, yet a user's Redis URL naming
// a database other than 0 still works: the guarded connections use that
// database, and the script's keys land where cleanup scans.
func TestGuardKeepsTheURLDatabase(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Open(t)
	opt := *rd.Client.(*redis.Client).Options()
	opt.DB = 3
	c := redis.NewClient(&opt)
	defer c.Close()
	prefix := "ratelab:20261123T090000-dbdb:"
	g, err := guard.NewACL(ctx, &server.Redis{Client: c, Info: rd.Info}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close(ctx) }()
	if err := g.Client.Eval(ctx, "return redis.call('SET', KEYS[1], 1)", []string{prefix + "{k}"}).Err(); err != nil {
		t.Fatalf("a guarded script on db 3: %v", err)
	}
	if n := c.Exists(ctx, prefix+"{k}").Val(); n != 1 {
		t.Errorf("the script's key is not in db 3 (EXISTS %d)", n)
	}
	if err := g.Client.Eval(ctx, "return redis.call('SELECT', 0)", []string{prefix + "{k}"}).Err(); !guard.IsRefusal(err) {
		t.Errorf("SELECT from a script on db 3: %v, want the guard's refusal", err)
	}
	if err := g.Client.Do(ctx, "SELECT", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("SELECT on the guarded connection: %v, want NOPERM", err)
	}
}
