package algorithms

import (
	"context"
	_ "embed"

	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

//go:embed sliding_counter.lua
var slidingCounterSrc string

var slidingCounterScript = NewLuaScript(slidingCounterSrc)

// SlidingCounter is Cloudflare's sliding-window counter: one counter per key
// and fixed window (floor(now/W)); the count of the trailing window is
// estimated as the previous window's count weighted by the share of it the
// trailing window still overlaps, plus the current window's count:
//
//	estimate = prev * (W - elapsed) / W + cur
//
// and a request is accepted when estimate + cost <= Limit. Only accepted
// units are counted.
//
// It approximates: the estimate assumes the previous window's requests were
// spread evenly over it. When they came late in that window (a burst just
// before the boundary), the estimate under-counts them and a trailing window
// can hold up to about 2L-1 — each unit of weight that "leaves" is re-admitted
// while the real requests are still inside the window. When they came early,
// it over-counts and refuses traffic an exact log would accept (fidelity
// below 1). `ratelab run` and `ratelab verify` measure both against the ideal
// oracle; see docs/peers-and-demo.md.
//
// Source: Cloudflare, "How we built rate limiting capable of scaling to
// millions of domains" (2017), the sliding-window counter with
// rate = prev * ((W - elapsed) / W) + cur.
//
// Keys: "<key>:<window number>" for the current and the previous window; when
// key has no hash tag it is wrapped as "{key}", so both counters live in one
// Cluster slot. Each counter's TTL runs to the end of the window after its own
// (it is read as "previous" until then): between W and 2W. Memory: up to two
// small integer STRINGs per active key.
type SlidingCounter struct {
	rdb   redis.Scripter
	limit limit.Limit
	args  limitArgs
}

var _ Scripted = (*SlidingCounter)(nil)

// NewSlidingCounter returns a sliding-window counter limiter on rdb (Client,
// Ring or ClusterClient).
func NewSlidingCounter(rdb redis.Scripter, l limit.Limit) (*SlidingCounter, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l.Precision = 0
	return &SlidingCounter{rdb: rdb, limit: l, args: newLimitArgs(l)}, nil
}

// Name returns "sliding-counter".
func (s *SlidingCounter) Name() string { return "sliding-counter" }

// Describe returns the limit, e.g. "50 per 10s (weighted previous window)".
func (s *SlidingCounter) Describe() string { return s.limit.String() + " (weighted previous window)" }

// Allow implements Limiter: the script call of Call, decoded.
func (s *SlidingCounter) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	return Decide(ctx, s.rdb, s, key, cost, at)
}

// Call implements Scripted.
func (s *SlidingCounter) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	return newCall(s, key, cost, at)
}

// WriteCall implements CallWriter.
func (s *SlidingCounter) WriteCall(c *ScriptCall, key string, cost int64, at Clock) error {
	if err := CheckCost(s.Name(), cost, s.limit.Count); err != nil {
		return err
	}
	*c = ScriptCall{Script: slidingCounterScript.Run, Expiry: slidingCounterScript.Expiry, Keys: append(c.Keys[:0], HashTagged(key)), Args: append(c.Args[:0], s.args.count, s.args.window, cost, at.arg()), DecidedAt: at.decidedAt()}
	return nil
}

// Decode implements Scripted: the reply {allowed, remaining, retry_after_us, now_us}.
func (s *SlidingCounter) Decode(c ScriptCall, reply any) (Decision, error) {
	return decodeCommon(c, reply)
}

// Capabilities implements Limiter: injected µs clock, weighted cost, a state per key.
func (s *SlidingCounter) Capabilities() Capabilities { return builtIn }
