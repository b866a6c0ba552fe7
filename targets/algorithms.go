package targets

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/limit"
)

// clientSide are the registered algorithms that run client-side
// (custom.ClientSider), by name: named on request, never among the
// defaults (algorithms.Names).
var clientSide = map[string]algorithms.Constructor{
	// separate commands from the client, not one atomic script
	"sliding-log-naive": func(rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
		return custom.NewSlidingLogNaive(rdb, l)
	},
}

// clientSideOrder is the order of clientSide's names.
var clientSideOrder = []string{"sliding-log-naive"}

// ClientSideAlgorithms returns the registered algorithms that run
// client-side (separate commands from the client): not in
// algorithms.Names, so not compared, measured or benchmarked unless asked
// for.
func ClientSideAlgorithms() []string { return slices.Clone(clientSideOrder) }

// KnownAlgorithms returns every registered algorithm name: the built-ins
// (algorithms.Names), then ClientSideAlgorithms.
func KnownAlgorithms() []string { return append(algorithms.Names(), clientSideOrder...) }

// NewAlgorithm builds the registered algorithm name (a built-in, or a
// client-side one) for limit l on rdb. Unknown names return an error
// listing the known ones. Errors: the constructor's (l.Validate's).
func NewAlgorithm(name string, rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
	if c, ok := clientSide[name]; ok {
		return c(rdb, l)
	}
	if !slices.Contains(algorithms.Names(), name) {
		known := KnownAlgorithms()
		sort.Strings(known)
		return nil, fmt.Errorf("unknown algorithm %q (known: %s)", name, strings.Join(known, ", "))
	}
	return algorithms.New(name, rdb, l)
}

// CheckAlgorithms returns an error naming the first of names that is not a
// registered algorithm, listing the known ones; nil when all are.
func CheckAlgorithms(names []string) error {
	known := KnownAlgorithms()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("unknown algorithm %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}
