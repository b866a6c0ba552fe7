package algorithms

import (
	"context"
	_ "embed"

	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

//go:embed fixed_window.lua
var fixedWindowSrc string

var fixedWindowScript = NewLuaScript(fixedWindowSrc)

// FixedWindow counts accepted cost units in a counter per window number
// floor(now/W), windows aligned to the Unix epoch. It is cheap (one small
// STRING per active key) and admits up to 2x the limit within one window
// length across a window boundary: a full burst at the end of one window and
// another at the start of the next.
//
// Source: seed 001's first limiter (INCR per window), envoy ratelimit, ulule.
// Unlike INCR-then-check, only accepted units are counted.
//
// Keys: "<key>:<window number>"; when key has no hash tag it is wrapped as
// "{key}" so every counter of one key lives in one Cluster slot.
type FixedWindow struct {
	rdb   redis.Scripter
	limit limit.Limit
	args  limitArgs
}

var _ Scripted = (*FixedWindow)(nil)

// NewFixedWindow returns a fixed-window limiter on rdb (Client, Ring or ClusterClient).
func NewFixedWindow(rdb redis.Scripter, l limit.Limit) (*FixedWindow, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l.Precision = 0
	return &FixedWindow{rdb: rdb, limit: l, args: newLimitArgs(l)}, nil
}

// Name returns "fixed-window".
func (f *FixedWindow) Name() string { return "fixed-window" }

// Describe returns the limit, e.g. "50 per 10s".
func (f *FixedWindow) Describe() string { return f.limit.String() }

// Allow implements Limiter: the script call of Call, decoded.
func (f *FixedWindow) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	return Decide(ctx, f.rdb, f, key, cost, at)
}

// Call implements Scripted.
func (f *FixedWindow) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	return newCall(f, key, cost, at)
}

// WriteCall implements CallWriter.
func (f *FixedWindow) WriteCall(c *ScriptCall, key string, cost int64, at Clock) error {
	if err := CheckCost(f.Name(), cost, f.limit.Count); err != nil {
		return err
	}
	*c = ScriptCall{Script: fixedWindowScript.Run, Expiry: fixedWindowScript.Expiry, Keys: append(c.Keys[:0], HashTagged(key)), Args: append(c.Args[:0], f.args.count, f.args.window, cost, at.arg()), DecidedAt: at.decidedAt()}
	return nil
}

// Decode implements Scripted: the reply {allowed, remaining, retry_after_us, now_us}.
func (f *FixedWindow) Decode(c ScriptCall, reply any) (Decision, error) {
	return decodeCommon(c, reply)
}

// Capabilities implements Limiter: injected µs clock, weighted cost, a state per key.
func (f *FixedWindow) Capabilities() Capabilities { return builtIn }
