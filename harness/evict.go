package harness

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/ratelab/ratelab/harness/evict"
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
// are not ratelab's, and stops it when its Redis changes under it. Call it
// once after Start, before the command writes, with estimate, the
// command's upper bound of the bytes it writes (negative: unknown).
// evict.Start refuses the command on a server that evicts and has no room
// for estimate (the *evict.Error is returned: the command must not start),
// and watches it as s.Evict says: the returned ctx is cancelled with an
// *evict.Error as soon as the server's evicted_keys moves or its headroom
// falls below the margin. On a server ratelab started (Redis.Owned)
// nothing is checked; with Redis.AllowEviction nothing is refused or
// stopped (a warning goes to progress, nil: none).
//
// The same ctx is also cancelled, with a *server.EnvError, when the
// command's Redis changes under it (Session.watchEnv: a restart, its keys
// removed), on every server, the ones ratelab started included.
//
// done stops the watches and returns the *evict.Error or
// *server.EnvError that stopped the command (also an EnvError found by
// one last check when done is called), or nil: the command returns it in
// place of what its cancelled calls said (GuardErr). Call done once the
// command's writes are over; gctx stays usable after it.
func (s *Session) Guard(ctx context.Context, estimate int64, progress io.Writer) (gctx context.Context, done func() error, err error) {
	none := func() error { return nil }
	if s.Redis == nil {
		return ctx, none, nil
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
	stop, err := evict.Start(gctx, s.Redis, estimate, s.Evict, progress, func(e *evict.Error) { fire(e) })
	if err != nil {
		cancel(nil)
		return ctx, none, err
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
