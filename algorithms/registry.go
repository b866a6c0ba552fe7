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
	// client-side: separate commands from the client, not one atomic script
	"sliding-log-naive": func(rdb redis.Scripter, l limit.Limit) (Limiter, error) { return NewSlidingLogNaive(rdb, l) },
}

// clientSideOrder are the registered algorithms that run client-side
// (ClientSider): named on request, never among the defaults of Names.
var clientSideOrder = []string{"sliding-log-naive"}

// ClientSideNames returns the registered algorithms that run client-side
// (separate commands from the client): not in Names, so not compared,
// measured or benchmarked unless asked for.
func ClientSideNames() []string { return append([]string(nil), clientSideOrder...) }

// Known returns every registered name: Names, then ClientSideNames.
func Known() []string { return append(Names(), clientSideOrder...) }

// order is the order algorithms are listed and compared in.
var order = []string{"fixed-window", "sliding-log", "bucketed-hash", "reservoir", "gcra", "sliding-counter"}

// Names returns the registered algorithm names in comparison order.
func Names() []string { return append([]string(nil), order...) }

// New builds the named algorithm for limit l on rdb. Unknown names return an
// error listing the known ones.
func New(name string, rdb redis.Scripter, l limit.Limit) (Limiter, error) {
	c, ok := registry[name]
	if !ok {
		known := Known()
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
			return fmt.Errorf("unknown algorithm %q (known: %s)", n, strings.Join(Known(), ", "))
		}
	}
	return nil
}
