package algorithms

import (
	"context"
	_ "embed"

	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

// The files keep the registered name, reservoir, as every algorithm's files
// do (fixed_window.go, sliding_log.lua, ...); the Go type is named by the
// field: TokenBucket.

//go:embed reservoir.lua
var reservoirSrc string

var reservoirScript = NewLuaScript(reservoirSrc)

// TokenBucket is the token bucket, registered as "reservoir" (seed 003's
// "reservoir model"): a bucket of capacity Limit units refilled continuously
// at Limit units per Window, kept in one small HASH per key (level and last
// refill time). A request takes cost units from the bucket or is denied.
//
// Boundary behaviour: a full bucket admits Limit at once and then refills
// Limit per Window, so a trailing window of length W can hold up to 2x Limit
// (the initial burst plus a window's refill). It never starves steady traffic
// below Limit per Window.
//
// Source: seed 003's closing comment on a "reservoir model"; Stripe's
// token-bucket limiters. The level is kept in integer micro-units.
// Keys: the key itself (one HASH, fields "l" and "t"); its TTL is the time to
// refill to full, after which a missing key means the same thing.
type TokenBucket struct {
	rdb   redis.Scripter
	limit limit.Limit
	args  limitArgs
}

var _ Scripted = (*TokenBucket)(nil)

// NewTokenBucket returns a token bucket of capacity l.Limit refilling l.Limit
// per l.Window. rdb may be a Client, Ring or ClusterClient.
func NewTokenBucket(rdb redis.Scripter, l limit.Limit) (*TokenBucket, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l.Precision = 0
	return &TokenBucket{rdb: rdb, limit: l, args: newLimitArgs(l)}, nil
}

// Name returns "reservoir".
func (r *TokenBucket) Name() string { return "reservoir" }

// Describe returns the capacity and refill, e.g. "capacity 50, refill 50 per 10s".
func (r *TokenBucket) Describe() string {
	return "capacity " + itoa(r.limit.Count) + ", refill " + r.limit.String()
}

// Allow implements Limiter: the script call of Call, decoded.
func (r *TokenBucket) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	return Decide(ctx, r.rdb, r, key, cost, at)
}

// Call implements Scripted.
func (r *TokenBucket) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	return newCall(r, key, cost, at)
}

// WriteCall implements CallWriter.
func (r *TokenBucket) WriteCall(c *ScriptCall, key string, cost int64, at Clock) error {
	if err := CheckCost(r.Name(), cost, r.limit.Count); err != nil {
		return err
	}
	*c = ScriptCall{Script: reservoirScript.Run, Expiry: reservoirScript.Expiry, Keys: append(c.Keys[:0], key), Args: append(c.Args[:0], r.args.count, r.args.window, cost, at.arg()), DecidedAt: at.decidedAt()}
	return nil
}

// Decode implements Scripted: the reply {allowed, remaining, retry_after_us, now_us}.
func (r *TokenBucket) Decode(c ScriptCall, reply any) (Decision, error) {
	return decodeCommon(c, reply)
}

// Capabilities implements Limiter: injected µs clock, weighted cost, a state per key.
func (r *TokenBucket) Capabilities() Capabilities { return builtIn }
