package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/evict"
	"github.com/ratelab/ratelab/harness/server"
)

// fullRedis is a redis-server started with --maxmemory and
// --maxmemory-policy, holding users user keys (200-byte strings, with a
// TTL under a volatile-* policy), whose maxmemory is then lowered to
// used_memory + headroom: the user's Redis under memory pressure.
func fullRedis(t *testing.T, policy string, users int, headroom int64) (url string, c *redis.Client) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--logfile", "", "--loglevel", "warning",
		"--maxmemory", "256mb", "--maxmemory-policy", policy)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c = redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for i := 0; c.Ping(ctx).Err() != nil; i++ {
		if i > 100 {
			t.Fatalf("redis-server on %s did not answer", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p := c.Pipeline()
	value := strings.Repeat("v", 200)
	for i := range users {
		ttl := time.Duration(0)
		if strings.HasPrefix(policy, "volatile-") {
			ttl = 24 * time.Hour
		}
		p.Set(ctx, fmt.Sprintf("user:%d", i), value, ttl)
		if p.Len() >= 1000 {
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := evict.Read(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(ms[0].UsedMemory+headroom, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	return "redis://" + addr, c
}

// countUserKeys counts the user's keys and the server's evicted_keys.
func countUserKeys(t *testing.T, c *redis.Client) (keys, evicted int64) {
	t.Helper()
	ctx := context.Background()
	var cursor uint64
	for {
		ks, next, err := c.Scan(ctx, cursor, "user:*", 10000).Result()
		if err != nil {
			t.Fatal(err)
		}
		keys += int64(len(ks))
		if cursor = next; cursor == 0 {
			break
		}
	}
	ms, err := evict.Read(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return keys, ms[0].EvictedKeys
}

// On a user's Redis that evicts (allkeys-lru with 10 MB of
// headroom, volatile-lru with 500 KB) every command that writes more than
// the headroom is refused with exit 2 naming the policy, the headroom and
// the estimate, and not one user key is evicted.
func TestEvictionRefused(t *testing.T) {
	t.Parallel()
	const users = 37_276
	var b strings.Builder
	b.WriteString("ts,user\n")
	for i := range 200_000 {
		fmt.Fprintf(&b, "%d,u%d\n", 1_700_000_000_000+int64(i)*3, (i*7919)%50_000)
	}
	traffic := writeFile(t, "traffic.csv", b.String())
	cases := []struct {
		name     string
		policy   string
		headroom int64
		args     []string
		want     []string // in stderr
	}{
		// the replay that evicted 37,275 of 37,276 user keys, exit 0
		{"replay", "allkeys-lru", 10 << 20, []string{"run", "--traffic", traffic, "--time-field", "ts", "--time-unit", "ms",
			"--key-field", "user", "--limit", "100", "--window", "1m"},
			[]string{"maxmemory-policy allkeys-lru with 9.", "MB headroom", "may write up to", "user keys could be evicted", "--allow-eviction"}},
		{"run", "allkeys-lru", 10 << 20, []string{"run"}, []string{"refusing to write", "allkeys-lru", "may write up to"}},
		// 500 KB is less than ratelab's margin: refused when opened, before its access check writes
		{"run volatile", "volatile-lru", 500 << 10, []string{"run"}, []string{"refusing to write", "volatile-lru", "user keys with a TTL could be evicted"}},
		{"verify", "allkeys-lru", 10 << 20, []string{"verify", "--algorithm", "sliding-log", "--limit", "50", "--window", "10s"}, []string{"refusing to write", "may write up to"}},
		{"capacity", "allkeys-lru", 10 << 20, []string{"capacity"}, []string{"refusing to write", "may write up to"}},
		{"bench", "allkeys-lru", 10 << 20, []string{"bench", "--duration", "1s"}, []string{"refusing to write", "may write up to"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, c := fullRedis(t, tc.policy, users, tc.headroom)
			args := append(tc.args, "--redis", url, "--out", filepath.Join(t.TempDir(), "out"))
			code, _, stderr := ratelab(t, args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
			keys, evicted := countUserKeys(t, c)
			if keys != users || evicted != 0 {
				t.Errorf("after: %d user keys (want %d), evicted_keys %d (want 0)", keys, users, evicted)
			}
			if n, _ := c.Keys(context.Background(), server.KeyPrefix+"*").Result(); len(n) > 0 {
				t.Errorf("ratelab's keys left behind: %v", n[:min(len(n), 3)])
			}
		})
	}
}

// --allow-eviction runs on a Redis that is refused without it (1.5 MB of
// headroom: under the 2 MB margin, room enough for the run's own keys,
// whose eviction would end it with exit 2).
func TestAllowEviction(t *testing.T) {
	t.Parallel()
	url, _ := fullRedis(t, "allkeys-lru", 1000, 1536<<10)
	args := []string{"run", "--scenarios", "boundary-burst", "--algorithms", "fixed-window", "--redis", url}
	code, _, stderr := ratelab(t, append(args, "--out", filepath.Join(t.TempDir(), "out"))...)
	if code != exitUsage || !strings.Contains(stderr, "refusing") {
		t.Fatalf("without --allow-eviction: exit %d: %s", code, stderr)
	}
	code, _, stderr = ratelab(t, append(args, "--allow-eviction", "--out", filepath.Join(t.TempDir(), "out"))...)
	if code != exitOK || strings.Contains(stderr, "refusing") {
		t.Fatalf("with --allow-eviction: exit %d: %s", code, stderr)
	}
}
