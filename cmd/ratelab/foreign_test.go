package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
)

// snapshot is every foreign key's DUMP and whether it has a TTL.
type snapshot map[string]struct {
	dump string
	ttl  time.Duration
}

// fillForeign writes n keys of every type (string, hash, zset, list, set,
// stream), every third with a TTL.
func fillForeign(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	p := c.Pipeline()
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("app:%d", i)
		switch i % 6 {
		case 0:
			p.Set(ctx, k, fmt.Sprintf("value-%d", i), 0)
		case 1:
			p.HSet(ctx, k, "a", i, "b", "x")
		case 2:
			p.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "m"}, redis.Z{Score: 1, Member: "n"})
		case 3:
			p.RPush(ctx, k, "x", "y", i)
		case 4:
			p.SAdd(ctx, k, "x", i)
		case 5:
			p.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: "1-1", Values: []any{"f", i}})
		}
		if i%3 == 0 {
			p.Expire(ctx, k, time.Hour)
		}
		if p.Len() > 1000 {
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

func takeSnapshot(t *testing.T, c *redis.Client) snapshot {
	t.Helper()
	ctx := context.Background()
	s := snapshot{}
	it := c.Scan(ctx, 0, "app:*", 1000).Iterator()
	var keys []string
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	p := c.Pipeline()
	dumps := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		dumps[i] = p.Dump(ctx, k)
		ttls[i] = p.PTTL(ctx, k)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		s[k] = struct {
			dump string
			ttl  time.Duration
		}{dumps[i].Val(), ttls[i].Val()}
	}
	return s
}

func compareSnapshots(t *testing.T, what string, before, after snapshot) {
	t.Helper()
	if len(after) != len(before) {
		t.Fatalf("%s: %d foreign keys, had %d", what, len(after), len(before))
	}
	for k, b := range before {
		a := after[k]
		if a.dump != b.dump {
			t.Fatalf("%s: %s changed", what, k)
		}
		if (b.ttl < 0) != (a.ttl < 0) || a.ttl > b.ttl {
			t.Fatalf("%s: %s TTL %v, was %v", what, k, a.ttl, b.ttl)
		}
	}
}

func ratelabKeys(t *testing.T, c *redis.Client) int {
	t.Helper()
	keys, err := server.ScanKeys(context.Background(), c, server.KeyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// buildBinary builds ratelab for the tests that signal it as a process.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ratelab")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
