package main

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/server"
)

// userKeys are a user's own keys under "ratelab:", some with names that
// look like a run's but are not (not hex, no such date, upper case), and
// one of a real-looking run id that no ratelab run registered.
var userKeys = []string{
	"ratelab:users:1", "ratelab:users:2", "ratelab:session:abc", "ratelab:x",
	"ratelab:20261122T030515-zzzz:x", "ratelab:20261399T030515-cfab:x",
	"ratelab:20261122T030515-CFAB:x", "ratelab:20261122T030515-cfab0:x",
	"ratelab:access-check:x", "ratelab:users:{20261122T030515-cfab}:x",
	unregistered + "x", unregistered + "y",
}

// unregistered is a real-looking run id's prefix without a record: an older
// ratelab's run, or a user's key. clean --yes keeps it; --run names it.
const unregistered = "ratelab:20261122T030515-cfab:"

// fillUserKeys writes userKeys, of several types, half with a TTL.
func fillUserKeys(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for i, k := range userKeys {
		var err error
		switch i % 3 {
		case 0:
			err = c.Set(ctx, k, "v"+strconv.Itoa(i), 0).Err()
		case 1:
			err = c.HSet(ctx, k, "f", i).Err()
		case 2:
			err = c.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "m"}).Err()
		}
		if err == nil && i%2 == 0 {
			err = c.Expire(ctx, k, time.Hour).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// dumpKeys is DUMP and whether there is a TTL of each key.
func dumpKeys(t *testing.T, c *redis.Client, keys []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range keys {
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			d = "missing: " + err.Error()
		}
		out[k] = d + " ttl:" + strconv.FormatBool(c.PTTL(ctx, k).Val() > 0)
	}
	return out
}

func sameDumps(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, b := range before {
		if after[k] != b {
			t.Errorf("%s: %s changed: %q, was %q", what, k, after[k], b)
		}
	}
}

// deadRun registers a run with n keys (n+1 with its record), then ends it as a kill would: its
// refreshing stops and its marker goes (as it does the heartbeat's TTL after a kill).
func deadRun(t *testing.T, c *redis.Client, n int) string {
	t.Helper()
	ctx := context.Background()
	id := server.NewRunID()
	reg, err := leftovers.Register(ctx, c, id, leftovers.Heartbeat{TTL: 500 * time.Millisecond, Every: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg.Stop()
	for i := 0; i < n; i++ {
		c.Set(ctx, server.RunPrefix(id)+"sliding-log:steady:{k"+strconv.Itoa(i)+"}", i, time.Hour)
	}
	c.Del(ctx, leftovers.MarkerKey(id))
	return id
}

// Clean lists and removes only the keys of real run ids that a
// run registered; a user's keys under "ratelab:" stay byte-identical, and
// --run takes only a run id.
func TestCleanLeavesUserKeysUnderPrefix(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	fillUserKeys(t, c)
	id := deadRun(t, c, 5) // 6 keys with its record
	url := "redis://" + v.addr
	before := dumpKeys(t, c, userKeys)

	for _, bad := range []string{"users", "session", "20261122T030515-zzzz", "20261399T030515-cfab", "*", "ratelab:" + id} {
		code, _, stderr := ratelab(t, "clean", "--redis", url, "--run", bad, "--yes")
		if code != exitUsage || !strings.Contains(stderr, "--run: ") {
			t.Errorf("--run %s: exit %d, %q; want exit %d naming --run", bad, code, stderr, exitUsage)
		}
	}
	sameDumps(t, "bad --run", before, dumpKeys(t, c, userKeys))

	code, stdout, stderr := ratelab(t, "clean", "--redis", url)
	if code != exitOK || !strings.Contains(stdout, server.RunPrefix(id)+"  6 keys") ||
		!strings.Contains(stdout, "6 keys would be removed") {
		t.Errorf("dry run: exit %d, %q %q", code, stdout, stderr)
	}
	if !strings.Contains(stdout, unregistered+"  2 keys") || !strings.Contains(stdout, "no run record") {
		t.Errorf("dry run does not list the unregistered run id as kept: %q", stdout)
	}
	for _, k := range []string{"users", "session", "zzzz", "CFAB", "access-check", "20261399"} {
		if strings.Contains(stdout, k) {
			t.Errorf("dry run lists a user's key (%s): %q", k, stdout)
		}
	}

	code, stdout, _ = ratelab(t, "clean", "--redis", url, "--yes")
	if code != exitOK || !strings.Contains(stdout, "removed 6 keys") {
		t.Errorf("--yes: exit %d, %q", code, stdout)
	}
	if left, _ := server.ScanKeys(context.Background(), c, server.RunPrefix(id)); len(left) != 0 {
		t.Errorf("--yes left the dead run's keys %v", left)
	}
	sameDumps(t, "clean --yes", before, dumpKeys(t, c, userKeys))

	// naming the unregistered run id removes it, and nothing else
	code, stdout, _ = ratelab(t, "clean", "--redis", url, "--run", strings.TrimSuffix(strings.TrimPrefix(unregistered, "ratelab:"), ":"), "--yes")
	if code != exitOK || !strings.Contains(stdout, "removed 2 keys") {
		t.Errorf("--run %s --yes: exit %d, %q", unregistered, code, stdout)
	}
	delete(before, unregistered+"x")
	delete(before, unregistered+"y")
	sameDumps(t, "clean --run --yes", before, dumpKeys(t, c, userKeys[:len(userKeys)-2]))
}

// Clean lists (and writes nothing) on a read-only replica, a
// Redis out of memory and one refusing writes for want of replicas.
func TestCleanListsReadOnlyRedis(t *testing.T) {
	writes := []string{"cmdstat_set:", "cmdstat_eval", "cmdstat_unlink:", "cmdstat_del:", "cmdstat_zadd:",
		"cmdstat_hset:", "cmdstat_incrby:", "cmdstat_pexpire:"}
	cases := []struct {
		name  string
		setup func(t *testing.T, v *victim, c *redis.Client) string // the URL clean lists
		yes   bool                                                  // --yes works there too
	}{
		{"replica", func(t *testing.T, v *victim, c *redis.Client) string {
			// the RDB of the full sync goes to temporary directories, not the package's
			c.ConfigSet(context.Background(), "dir", t.TempDir())
			c.ConfigSet(context.Background(), "repl-diskless-sync-delay", "0")
			port := strconv.Itoa(freePortT(t))
			r := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--logfile", "", "--dir", t.TempDir(), "--replicaof", "127.0.0.1", v.port)
			if err := r.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Process.Kill(); _ = r.Wait() })
			rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port})
			defer rc.Close()
			for i := 0; ; i++ {
				if n, _ := rc.DBSize(context.Background()).Result(); n >= 4 {
					break
				}
				if i > 500 {
					t.Fatal("the replica did not sync")
				}
				time.Sleep(10 * time.Millisecond)
			}
			rc.ConfigResetStat(context.Background())
			return "redis://127.0.0.1:" + port
		}, false},
		{"oom", func(t *testing.T, v *victim, c *redis.Client) string {
			c.ConfigSet(context.Background(), "maxmemory-policy", "noeviction")
			c.ConfigSet(context.Background(), "maxmemory", "1")
			if err := c.Set(context.Background(), "probe", 1, 0).Err(); err == nil || !strings.Contains(err.Error(), "OOM") {
				t.Fatalf("not out of memory: %v", err)
			}
			c.ConfigResetStat(context.Background())
			return "redis://" + v.addr
		}, true},
		{"min-replicas-to-write", func(t *testing.T, v *victim, c *redis.Client) string {
			c.ConfigSet(context.Background(), "min-replicas-to-write", "1")
			if err := c.Set(context.Background(), "probe", 1, 0).Err(); err == nil || !strings.Contains(err.Error(), "NOREPLICAS") {
				t.Fatalf("writes not refused: %v", err)
			}
			c.ConfigResetStat(context.Background())
			return "redis://" + v.addr
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := startVictim(t)
			c := v.client(t)
			id := deadRun(t, c, 3) // 3 keys and the record
			url := tc.setup(t, v, c)
			lc := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(url, "redis://")})
			defer lc.Close()
			code, stdout, stderr := ratelab(t, "clean", "--redis", url)
			if code != exitOK || !strings.Contains(stdout, server.RunPrefix(id)+"  4 keys") ||
				!strings.Contains(stdout, "4 keys would be removed") {
				t.Errorf("dry run: exit %d, %q %q", code, stdout, stderr)
			}
			stats := lc.Info(context.Background(), "commandstats").Val()
			for _, w := range writes {
				if strings.Contains(stats, w) {
					t.Errorf("the dry run wrote: %s", w)
				}
			}
			if tc.yes {
				code, stdout, stderr = ratelab(t, "clean", "--redis", url, "--yes")
				if code != exitOK || !strings.Contains(stdout, "removed 4 keys") {
					t.Errorf("--yes: exit %d, %q %q", code, stdout, stderr)
				}
			}
		})
	}
}

// A port that refuses connections is reported as such at once,
// not as "context deadline exceeded" after --connect-timeout.
func TestConnectionRefusedAtOnce(t *testing.T) {
	url := "redis://127.0.0.1:" + strconv.Itoa(freePortT(t))
	for _, args := range [][]string{
		{"clean", "--redis", url},
		{"run", "--redis", url, "--scenarios", "boundary-burst", "--out", t.TempDir()},
		{"verify", "--redis", url, "--algorithm", "sliding-log", "--limit", "10", "--window", "1s"},
	} {
		start := time.Now()
		code, _, stderr := ratelab(t, args...)
		took := time.Since(start)
		if code != exitUsage || !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, url[len("redis://"):]) {
			t.Errorf("%s: exit %d, %q; want exit %d, connection refused and the address", args[0], code, stderr, exitUsage)
		}
		if took > time.Second {
			t.Errorf("%s: took %v, want < 1s", args[0], took)
		}
	}
}
