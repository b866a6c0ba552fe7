package harness

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/scenarios"
)

// BytesPerUnit is the upper bound of Redis memory, in bytes, that one
// accepted cost unit of a decision can add, used to estimate what a
// command writes before it writes: a new key with its TTL (MEMORY USAGE
// 72..152 B plus ~60 B of expiry and allocator overhead), or one more
// entry of a key (sliding-log's skiplist member ~140 B, a hash field
// ~64 B); see NOTES.md. Every algorithm adds at most this per unit.
const BytesPerUnit = 256

// ScheduleBytes is the upper bound of bytes the arrivals write to one
// algorithm's keys: BytesPerUnit per cost unit (a cost below 1 counts 1).
func ScheduleBytes(arrivals []scenarios.Arrival) int64 {
	var units int64
	for _, a := range arrivals {
		units += max(a.Cost, 1)
	}
	return units * BytesPerUnit
}

// Guard keeps the command from making the user's Redis evict keys that
// are not ratelab's. Call it once after Start, before the command writes,
// with estimate, the command's upper bound of the bytes it writes
// (negative: unknown). On a server ratelab started (Redis.Owned) it does
// nothing. Else it reads maxmemory, maxmemory-policy and used_memory
// (server.CheckEviction) and, where the server evicts (allkeys-* or
// volatile-* with a maxmemory) and the estimate does not fit the headroom
// less a margin, returns the *server.EvictionError: the command must not
// start. While the command runs, the returned ctx is cancelled with an
// *server.EvictionError as soon as the server's evicted_keys moves or its
// headroom falls below the margin (server.WatchEvictions, every
// server.WatchInterval).
//
// With Redis.AllowEviction nothing is refused or stopped: a warning goes to
// progress (nil: none) when the server could evict.
//
// done stops the watch and returns the *server.EvictionError that stopped
// the command, or nil: the command returns it in place of what its
// cancelled calls said (GuardErr). Call done once the command's writes are
// over; gctx stays usable after it.
func (s *Session) Guard(ctx context.Context, estimate int64, progress io.Writer) (gctx context.Context, done func() error, err error) {
	none := func() error { return nil }
	if s.Redis == nil || s.Redis.Owned() {
		return ctx, none, nil
	}
	ms, err := server.CheckEviction(ctx, s.Redis.Client, s.Redis.Info.Addr, estimate)
	var ee *server.EvictionError
	switch {
	case s.Redis.AllowEviction && errors.As(err, &ee):
		say(progress, "ratelab: warning: --allow-eviction: Redis at %s evicts (maxmemory-policy %s, %s headroom) and this command may write up to %s: other keys may be evicted, and the command will not stop for it\n",
			ee.Addr, ee.Policy, server.FormatBytes(ee.Headroom), server.EstimateText(estimate))
		return ctx, none, nil
	case s.Redis.AllowEviction:
		return ctx, none, nil
	case err != nil:
		return ctx, none, err
	}
	gctx, cancel := context.WithCancelCause(ctx)
	var mu sync.Mutex
	var fired error
	stop := server.WatchEvictions(gctx, s.Redis.Client, s.Redis.Info.Addr, ms, func(e *server.EvictionError) {
		mu.Lock()
		fired = e
		mu.Unlock()
		cancel(e)
	})
	return gctx, func() error {
		stop()
		mu.Lock()
		defer mu.Unlock()
		return fired
	}, nil
}

// GuardErr is the command's error once its guard is done (Guard's done
// called here): the eviction that stopped it, in place of what its
// cancelled calls said, else err.
func GuardErr(done func() error, err error) error {
	if gerr := done(); gerr != nil {
		return gerr
	}
	return err
}

// estimateBytes is the upper bound of bytes a scenario run writes: every
// scenario's schedule (built as Run builds it) for each of n algorithms and
// targets; -1 (unknown) when a schedule cannot be built.
func (cfg Config) estimateBytes(list []scenarios.Scenario, n int) int64 {
	var total int64
	for _, sc := range list {
		_, p := cfg.LimitFor(sc)
		sched, err := sc.Make(p)
		if err != nil {
			return -1
		}
		b := ScheduleBytes(sched.Arrivals)
		if cfg.Cost > 0 {
			b = int64(len(sched.Arrivals)) * cfg.Cost * BytesPerUnit
		}
		total += b * int64(n)
	}
	return total
}

// minTrafficLine is the fewest bytes a traffic record takes ("0,k\n" is
// 4; real timestamps take 10 or more): replayEstimate counts Size/8 lines.
const minTrafficLine = 8

// estimateBytes is the upper bound of bytes a replay writes for n
// algorithms: every line a key of its own filled with cfg.Cost units, or
// with Limit units when the records carry their own costs (a key holds at
// most Limit accepted units per window), with lines bounded by
// Size/minTrafficLine; -1 (unknown) when the size is unknown (standard
// input) or compressed (.gz).
func (cfg ReplayConfig) estimateBytes(n int) int64 {
	if cfg.Size <= 0 || strings.HasSuffix(cfg.Source, ".gz") {
		return -1
	}
	units := cfg.Limit.Count
	if cfg.Cost > 0 {
		units = cfg.Cost
	}
	lines := cfg.Size/minTrafficLine + 1
	if units > 0 && lines > math.MaxInt64/BytesPerUnit/int64(max(n, 1))/units {
		return math.MaxInt64
	}
	return lines * units * BytesPerUnit * int64(n)
}

// demoEstimate is the upper bound of bytes a demo writes: boundary-burst's
// 2 x Limit decisions per algorithm, doubled for its spare requests.
func demoEstimate(cfg DemoConfig) int64 {
	return 4 * cfg.Limit.Count * BytesPerUnit * int64(len(cfg.Algorithms))
}
