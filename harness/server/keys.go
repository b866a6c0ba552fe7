package server

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
	return scanMatch(ctx, c, EscapeGlob(prefix)+"*")
}

// scanMatch returns the keys matching the SCAN MATCH glob pattern, on every
// master when c is a ClusterClient.
func scanMatch(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
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
// on a Cluster too (one pipeline). A run's marker and record (MarkerKey,
// RecordKey) go last, so that a removal cut short leaves the run
// registered and `ratelab clean` can finish it.
func DeleteKeys(ctx context.Context, c redis.UniversalClient, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ordered := make([]string, 0, len(keys))
	var meta []string
	for _, k := range keys {
		if isMetaKey(k) {
			meta = append(meta, k)
		} else {
			ordered = append(ordered, k)
		}
	}
	ordered = append(ordered, meta...)
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range ordered {
			p.Unlink(ctx, k)
		}
		return nil
	})
	return err
}

// EscapeGlob escapes SCAN MATCH's special characters: the glob that
// matches s literally.
func EscapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// runIDLayout is the time part of a run id (UTC).
const runIDLayout = "20060102T150405"

// NewRunID returns a fresh run id: UTC time plus 4 random hex digits,
// "20261122T030515-cfab" (see IsRunID).
func NewRunID() string {
	var b [2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24)
	return time.Now().UTC().Format(runIDLayout) + "-" + hex.EncodeToString(b[:])
}

// IsRunID reports whether s has the form of NewRunID's ids: a valid UTC
// time "20060102T150405", a dash and 4 lower-case hex digits. `ratelab
// clean` never looks at keys under "ratelab:<anything else>:".
func IsRunID(s string) bool {
	if len(s) != len(runIDLayout)+5 || s[len(runIDLayout)] != '-' {
		return false
	}
	if _, err := time.Parse(runIDLayout, s[:len(runIDLayout)]); err != nil {
		return false
	}
	for _, r := range s[len(runIDLayout)+1:] {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// runIDGlob is the SCAN MATCH pattern of run ids' keys: the digits and hex
// digits of a run id, so that SCAN itself passes over other keys.
const runIDGlob = KeyPrefix + "[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]-" +
	"[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:*"

// RunPrefix is the key prefix of run id: "ratelab:<id>:".
func RunPrefix(id string) string { return KeyPrefix + id + ":" }

// MarkerSuffix and RecordSuffix end the two keys a run registers under its
// prefix (package harness/leftovers): its marker "ratelab:<run id>:~alive"
// and its record "ratelab:<run id>:~run". DeleteKeys removes them last.
const (
	MarkerSuffix = "~alive"
	RecordSuffix = "~run"
)

func isMetaKey(k string) bool {
	return strings.HasSuffix(k, ":"+MarkerSuffix) || strings.HasSuffix(k, ":"+RecordSuffix)
}

// ScanRunKeys returns the keys under every run id's prefix (SCAN with
// runIDGlob, on every master of a Cluster): keys "ratelab:<run id>:..."
// whose run id may be one of NewRunID's. Callers still check IsRunID.
func ScanRunKeys(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	return scanMatch(ctx, c, runIDGlob)
}
