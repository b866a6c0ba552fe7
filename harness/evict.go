package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// The same ctx is also cancelled, with a *server.EnvError, when the
// command's Redis changes under it (Session.watchEnv: a restart, its keys
// removed), on every server, the ones ratelab started included.
//
// done stops the watches and returns the *server.EvictionError or
// *server.EnvError that stopped the command (also an EnvError found by
// one last check when done is called), or nil: the command returns it in
// place of what its cancelled calls said (GuardErr). Call done once the
// command's writes are over; gctx stays usable after it.
func (s *Session) Guard(ctx context.Context, estimate int64, progress io.Writer) (gctx context.Context, done func() error, err error) {
	none := func() error { return nil }
	if s.Redis == nil {
		return ctx, none, nil
	}
	var ms []server.NodeMemory
	if !s.Redis.Owned() {
		ms, err = server.CheckEviction(ctx, s.Redis.Client, s.Redis.Info.Addr, estimate)
		var ee *server.EvictionError
		switch {
		case s.Redis.AllowEviction && errors.As(err, &ee):
			Say(progress, "ratelab: warning: --allow-eviction: Redis at %s evicts (maxmemory-policy %s, %s headroom) and this command may write up to %s: other keys may be evicted, and the command will not stop for it\n",
				ee.Addr, ee.Policy, server.FormatBytes(ee.Headroom), server.EstimateText(estimate))
			ms = nil
		case s.Redis.AllowEviction:
			ms = nil
		case err != nil:
			return ctx, none, err
		}
	}
	gctx, cancel := context.WithCancelCause(ctx)
	var mu sync.Mutex
	var fired error
	fire := func(e error) {
		mu.Lock()
		if fired == nil {
			fired = e
		}
		mu.Unlock()
		cancel(e)
	}
	stop := func() {}
	if ms != nil {
		stop = server.WatchEvictions(gctx, s.Redis.Client, s.Redis.Info.Addr, ms, func(e *server.EvictionError) { fire(e) })
	}
	stopEnv := s.watchEnv(gctx, fire)
	return gctx, func() error {
		stop()
		stopEnv()
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

// Say writes a formatted line to w (a command's progress); nil w
// discards it.
func Say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
