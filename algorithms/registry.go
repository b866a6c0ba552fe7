package algorithms

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

// Constructor builds a limiter on rdb for one limit.
type Constructor func(rdb redis.Scripter, l limit.Limit) (Limiter, error)

// registry holds the built-ins: one atomic script per decision. The
// client-side sliding-log-naive is registered by targets, above the
// package that builds it (custom).
var registry = map[string]Constructor{
	"fixed-window":    func(rdb redis.Scripter, l limit.Limit) (Limiter, error) { return NewFixedWindow(rdb, l) },
	"sliding-log":     func(rdb redis.Scripter, l limit.Limit) (Limiter, error) { return NewSlidingLog(rdb, l) },
	"bucketed-hash":   func(rdb redis.Scripter, l limit.Limit) (Limiter, error) { return NewBucketedHash(rdb, l) },
	"reservoir":       func(rdb redis.Scripter, l limit.Limit) (Limiter, error) { return NewTokenBucket(rdb, l) },
	"gcra":            func(rdb redis.Scripter, l limit.Limit) (Limiter, error) { return NewGCRA(rdb, l) },
	"sliding-counter": func(rdb redis.Scripter, l limit.Limit) (Limiter, error) { return NewSlidingCounter(rdb, l) },
}

// order is the order algorithms are listed and compared in.
var order = []string{"fixed-window", "sliding-log", "bucketed-hash", "reservoir", "gcra", "sliding-counter"}

// Names returns the built-in algorithm names in comparison order: the
// defaults of every study.
func Names() []string { return append([]string(nil), order...) }

// New builds the built-in algorithm name for limit l on rdb. Unknown names
// (the client-side sliding-log-naive among them: targets.NewAlgorithm
// builds every registered name) return an error listing the built-ins.
func New(name string, rdb redis.Scripter, l limit.Limit) (Limiter, error) {
	c, ok := registry[name]
	if !ok {
		known := Names()
		sort.Strings(known)
		return nil, fmt.Errorf("unknown algorithm %q (built-ins: %s)", name, strings.Join(known, ", "))
	}
	return c(rdb, l)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
