package algorithms

import (
	"context"
	_ "embed"
	"strconv"
	"sync/atomic"

	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

//go:embed sliding_log.lua
var slidingLogSrc string

var slidingLogScript = NewLuaScript(slidingLogSrc)

// SlidingLog is the sliding-window log: a sorted set per key holding one
// member per accepted cost unit, scored by its acceptance time in µs. A
// request is accepted when the units accepted in the trailing window
// (now-W, now] plus its cost stay within the limit, so no window of length W
// ever holds more than the limit. Memory grows with the limit: one entry per
// accepted unit (listpack up to 128 entries, skiplist after).
//
// Source: seeds 000, 001 and 002 (sorted set of timestamps; weighted cost and
// Retry-After from the oldest entry as in seed 001). RetryAfter here is exact
// for any cost: the time until enough of the oldest entries have left.
type SlidingLog struct {
	rdb   redis.Scripter
	limit limit.Limit
	nonce atomic.Uint64
	salt  string
	args  limitArgs
}

var _ Scripted = (*SlidingLog)(nil)

// NewSlidingLog returns a sliding-window log limiter on rdb. rdb may be a
// Client, Ring or ClusterClient.
func NewSlidingLog(rdb redis.Scripter, l limit.Limit) (*SlidingLog, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l.Precision = 0
	return &SlidingLog{rdb: rdb, limit: l, salt: NewSalt(), args: newLimitArgs(l)}, nil
}

// Name returns "sliding-log".
func (s *SlidingLog) Name() string { return "sliding-log" }

// Describe returns the limit, e.g. "50 per 10s".
func (s *SlidingLog) Describe() string { return s.limit.String() }

// Allow implements Limiter: the script call of Call, decoded.
func (s *SlidingLog) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	return Decide(ctx, s.rdb, s, key, cost, at)
}

// Call implements Scripted.
func (s *SlidingLog) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	return newCall(s, key, cost, at)
}

// WriteCall implements CallWriter.
func (s *SlidingLog) WriteCall(c *ScriptCall, key string, cost int64, at Clock) error {
	if err := CheckCost(s.Name(), cost, s.limit.Count); err != nil {
		return err
	}
	var buf [48]byte // salt and counter built on the stack: one allocation, the string
	nonce := string(strconv.AppendUint(append(buf[:0], s.salt...), s.nonce.Add(1), 36))
	*c = ScriptCall{Script: slidingLogScript.Run, Expiry: slidingLogScript.Expiry, Keys: append(c.Keys[:0], key), Args: append(c.Args[:0], s.args.count, s.args.window, cost, at.arg(), nonce), DecidedAt: at.decidedAt()}
	return nil
}

// Decode implements Scripted: the reply {allowed, remaining, retry_after_us, now_us}.
func (s *SlidingLog) Decode(c ScriptCall, reply any) (Decision, error) { return decodeCommon(c, reply) }

// Capabilities implements Limiter: injected µs clock, weighted cost, a state per key.
func (s *SlidingLog) Capabilities() Capabilities { return builtIn }

// Scripts returns the scripts this package runs, so callers can SCRIPT LOAD
// them ahead of pipelines.
func Scripts() []*redis.Script {
	return []*redis.Script{slidingLogScript.Run, fixedWindowScript.Run, bucketedHashScript.Run, reservoirScript.Run, gcraScript.Run, gcraVirtualScript.Run, slidingCounterScript.Run}
}
