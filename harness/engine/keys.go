package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyPrefix is the prefix of every key ratelab writes; a run adds its own id
// ("ratelab:<run id>:") so runs never see each other's keys.
const KeyPrefix = "ratelab:"

// ScanKeys returns the keys whose names start with prefix, found with SCAN
// (never KEYS), on every master when c is a ClusterClient.
func ScanKeys(ctx context.Context, c redis.UniversalClient, prefix string) ([]string, error) {
	pattern := escapeGlob(prefix) + "*"
	scan := func(ctx context.Context, node *redis.Client) ([]string, error) {
		var keys []string
		it := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		return keys, it.Err()
	}
	switch cc := c.(type) {
	case *redis.Client:
		return scan(ctx, cc)
	case *redis.ClusterClient:
		var mu sync.Mutex
		var all []string
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			keys, err := scan(ctx, node)
			mu.Lock()
			all = append(all, keys...)
			mu.Unlock()
			return err
		})
		return all, err
	}
	var keys []string
	it := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	return keys, it.Err()
}

// MemoryUsage sums MEMORY USAGE key SAMPLES 0 over keys, in bytes (one
// pipeline). Keys that vanished in between count 0.
func MemoryUsage(ctx context.Context, c redis.UniversalClient, keys []string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	cmds := make([]*redis.IntCmd, len(keys))
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.MemoryUsage(ctx, k, 0)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, err
	}
	var sum int64
	for _, cmd := range cmds {
		sum += cmd.Val()
	}
	return sum, nil
}

// DeleteKeys removes keys with UNLINK, one key per command so that it works
// on a Cluster too (one pipeline).
func DeleteKeys(ctx context.Context, c redis.UniversalClient, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
	return err
}

// escapeGlob escapes SCAN MATCH's special characters.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// NewRunID returns a fresh run id: UTC time plus 4 random hex digits.
func NewRunID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
