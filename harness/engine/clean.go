package engine

import (
	"context"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Leftover is one run's keys still in a Redis (a run that was killed before
// it could remove them).
type Leftover struct {
	// Prefix is the run's key prefix, "ratelab:<run id>:".
	Prefix string   `json:"prefix"`
	Keys   []string `json:"keys"`
	// MemoryBytes sums MEMORY USAGE (SAMPLES 0) over Keys.
	MemoryBytes int64 `json:"memory_bytes"`
}

// FindLeftovers lists ratelab's keys in c by SCAN (never KEYS), grouped by
// run prefix, in prefix order. Keys outside KeyPrefix are never looked at.
func FindLeftovers(ctx context.Context, c redis.UniversalClient) ([]Leftover, error) {
	keys, err := ScanKeys(ctx, c, KeyPrefix)
	if err != nil {
		return nil, err
	}
	by := map[string][]string{}
	for _, k := range keys {
		rest := strings.TrimPrefix(k, KeyPrefix)
		i := strings.IndexByte(rest, ':')
		if i < 0 {
			continue // not a run's key
		}
		p := KeyPrefix + rest[:i+1]
		by[p] = append(by[p], k)
	}
	out := make([]Leftover, 0, len(by))
	for p, ks := range by {
		sort.Strings(ks)
		mem, err := MemoryUsage(ctx, c, ks)
		if err != nil {
			return nil, err
		}
		out = append(out, Leftover{Prefix: p, Keys: ks, MemoryBytes: mem})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Prefix < out[b].Prefix })
	return out, nil
}
