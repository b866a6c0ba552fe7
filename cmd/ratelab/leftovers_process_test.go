//go:build process

package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/server"
)

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
