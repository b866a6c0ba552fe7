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

// Names returns the registered algorithm names in comparison order.
func Names() []string { return append([]string(nil), order...) }

// New builds the named algorithm for limit l on rdb. Unknown names return an
// error listing the known ones.
func New(name string, rdb redis.Scripter, l limit.Limit) (Limiter, error) {
	c, ok := registry[name]
	if !ok {
		known := Names()
		sort.Strings(known)
		return nil, fmt.Errorf("unknown algorithm %q (known: %s)", name, strings.Join(known, ", "))
	}
	return c(rdb, l)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// CheckNames returns an error naming the first of names that is not a
// registered algorithm, listing the known ones; nil when all are.
func CheckNames(names []string) error {
	for _, n := range names {
		if _, ok := registry[n]; !ok {
			return fmt.Errorf("unknown algorithm %q (known: %s)", n, strings.Join(Names(), ", "))
		}
	}
	return nil
}
