// Package algorithms holds ratelab's rate limiters: each one a Lua script that
// runs inside Redis (embedded beside its Go file) and a thin Go wrapper behind
// the Limiter interface.
//
// Every script follows the same rules: all keys it touches are in KEYS or share
// the hash tag of KEYS[1] (so Redis Cluster works); numbers travel in ARGV; time
// is integer microseconds since the Unix epoch, injected by the caller or read
// from Redis TIME when the caller passes none; only accepted requests are
// recorded; every key gets a TTL so idle keys vanish.
//
// New and Names name the built-ins. The limiters a user brings (a Lua
// script with its templates and reply predicate, a script run
// client-side, an HTTP endpoint) are in package custom, built on this
// package's Limiter, Scripted and ScriptCall; package targets names every
// algorithm, the client-side ones included.
package algorithms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/limit"
)

// Limiter decides one request of a given cost for one key.
//
// Implementations are safe for concurrent use by multiple goroutines: all
// state lives in Redis and each decision is one atomic script call.
type Limiter interface {
	// Allow decides whether a request of cost units for key fits the limit at
	// the instant given by at. cost must be in 1..Limit; a larger cost
	// returns an error wrapping ErrCostExceedsLimit before any Redis call.
	// Errors from Redis (timeouts, NOSCRIPT that could not be reloaded,
	// script errors) are returned as they come, wrapped with the
	// algorithm's name.
	Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error)
	// Name is the registry name of the algorithm, e.g. "sliding-log".
	Name() string
	// Describe states the configured limit in words, e.g.
	// "50 per 10s (precision 1s)".
	Describe() string
	// Capabilities says what the limiter can take: an injected clock,
	// weighted costs, its resolution, keys.
	Capabilities() Capabilities
}

// ErrCostExceedsLimit is returned by Allow when cost can never fit: cost > limit
// (or cost < 1).
var ErrCostExceedsLimit = errors.New("cost exceeds limit")

// Clock says which time a script decides at.
//
// The zero Clock (RedisTime) means "use Redis TIME": the script reads the
// Redis server's clock. At(t) injects t, truncated to whole microseconds.
//
// ratelab names a decision's time source with one vocabulary, here and in
// every package above this one:
//
//   - injected: the caller hands the script its time (At); the script reads
//     no clock. Capabilities.InjectsTime says a limiter can take one.
//   - Redis TIME (RedisTime): the script reads the Redis server's clock.
//   - its own clock: what a limiter that cannot take an injected time
//     decides on: Redis TIME, or an HTTP server's clock.
//   - wall clock: the clock of the ratelab process (time.Now).
//
// The harness's clock modes (harness.ClockMode, the --clock values and the
// "clock" of results) choose among them for a whole run:
//
//   - virtual: the harness injects exact timestamps from the schedule and
//     never waits; a day's scenario runs in seconds.
//   - redis: scripts read Redis TIME.
//   - client: the harness injects its wall clock, optionally skewed per
//     simulated client.
//
// "Virtual time" is the time of the virtual mode; "real time" is any run
// that waits for the wall clock (the redis and client modes, verify's
// real-time trials, a target on its own clock).
type Clock struct {
	t      time.Time
	inject bool
}

// RedisTime is the Clock that makes a script read Redis TIME. It is the zero Clock.
func RedisTime() Clock { return Clock{} }

// At is the Clock that injects t into the script.
func At(t time.Time) Clock { return Clock{t: t, inject: true} }

// Injected reports whether the clock carries a time, and that time.
func (c Clock) Injected() (time.Time, bool) { return c.t, c.inject }

// arg is the ARGV form of the clock: integer microseconds, or "" for Redis TIME.
func (c Clock) arg() any {
	if !c.inject {
		return ""
	}
	// an int64 is written in decimal, as the string was: one allocation
	// (the box) instead of two (the string and its box)
	return c.t.UnixMicro()
}

// limitArgs are a limit's count and window (µs) as script arguments,
// boxed once when the limiter is made: a call then boxes neither (a
// boxed integer above 255 allocates).
type limitArgs struct{ count, window any }

func newLimitArgs(l limit.Limit) limitArgs {
	return limitArgs{count: l.Count, window: l.Window.Microseconds()}
}

// Decision is the verdict of one Allow call: the limiter's answer, and the
// innermost of ratelab's decision records. The harness wraps it with the
// arrival and the call's times in a harness.Outcome, which is written as a
// measure.Record (one line of decisions.jsonl).
type Decision struct {
	// Allowed is true when the request was accepted (and recorded).
	Allowed bool
	// Remaining is how many cost units could still be accepted at DecidedAt
	// after this decision. Never negative.
	Remaining int64
	// RetryAfter is how long from DecidedAt until a request of the same cost
	// would be accepted, assuming no other traffic. Zero when Allowed.
	// Resolution: 1 µs.
	RetryAfter time.Duration
	// DecidedAt is the timestamp the script used (injected, or Redis TIME),
	// in microseconds. Verification uses it: it is the limiter's own clock.
	DecidedAt time.Time
}

// CheckCost returns an error wrapping ErrCostExceedsLimit, naming the
// limiter name, when cost is outside 1..limit; nil otherwise. A Limiter's
// Allow checks it before any Redis call.
func CheckCost(name string, cost, limit int64) error {
	if cost < 1 || cost > limit {
		return fmt.Errorf("%s: cost %d with limit %d: %w", name, cost, limit, ErrCostExceedsLimit)
	}
	return nil
}

// decidedAt is the time a call hands its script: the injected time
// truncated to 1 µs, or zero for Redis TIME.
func (c Clock) decidedAt() time.Time {
	if !c.inject {
		return time.Time{}
	}
	return c.t.Truncate(time.Microsecond)
}
