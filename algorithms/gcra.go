package algorithms

import (
	"context"
	"fmt"
	"strconv"
	"time"

	redis_rate "github.com/go-redis/redis_rate/v10"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/vclock"
	"github.com/redis/go-redis/v9"
)

// GCRA is go-redis/redis_rate (v10) itself — the library as a dependency,
// its Lua script and its AllowN — behind the Limiter interface. redis_rate
// implements the generic cell rate algorithm: one STRING per key holding the
// theoretical arrival time (TAT, float seconds since 2017-01-01); a request
// of cost n is accepted when TAT + n*T - B*T <= now, with emission interval
// T = Period/Rate and burst B.
//
// Mapping from ratelab's Limit (L per W): Rate L per Period W, Burst L —
// what redis_rate's own PerSecond/PerMinute/PerHour do (burst = rate).
// Describe states it: "rate 50 per 10s, burst 50 (redis_rate GCRA)".
// Boundary behaviour: a full burst of L at once, then one unit every W/L, so
// a trailing window of length W can hold up to L + L - 1 = 2L-1 (burst plus
// a window of emission): GCRA bounds the rate, not the count per window.
// Source: github.com/go-redis/redis_rate (script from rwz/redis-gcra).
//
// Every decision, Allow's and a pipeline's (Call), is one call of
// redis_rate's published script (taken from the library at init) with the
// arguments its AllowN sends: burst, rate, period in seconds, cost.
// TestGCRADecidesAsRedisRate holds Allow to AllowN's verdicts.
//
// Clock: redis_rate's script reads Redis TIME. With an injected clock
// (virtual or client) the script runs rewritten by vclock.Rewrite, so its
// TIME answers the injected time, exactly: GCRA takes virtual time like
// every other algorithm, and DecidedAt is the injected time. With RedisTime
// it runs as published on Redis TIME; Allow's DecidedAt is then an estimate
// (the script does not return the time it used): the midpoint of the call
// on the local clock plus the server's clock offset, measured once at
// construction from TIME round trips when rdb can run TIME; error about
// half a round trip.
//
// Keys: redis_rate's AllowN names its key "rate:" + key. GCRA hands the
// script the caller's key without that prefix, so every key it writes
// starts with the caller's prefix ("ratelab:<run id>:…") and ratelab's
// SCAN-based memory measurement and cleanup find it. The key's TTL
// is redis_rate's: EX ceil(time to reset) seconds (at most W rounded up to
// a second), a relative TTL that counts down on Redis's own clock also when
// the decisions are on virtual time. Memory: one STRING per active key.
type GCRA struct {
	rdb    redis.Scripter
	limit  limit.Limit
	rl     redis_rate.Limit
	offset time.Duration // Redis server clock minus local clock
}

var _ Scripted = (*GCRA)(nil)

// NewGCRA returns redis_rate's GCRA with rate l.Limit per l.Window and burst
// l.Limit, on rdb (Client, Ring or ClusterClient). When rdb can run TIME it
// spends up to 3 TIME round trips (at most 1 s) measuring the server's clock
// offset; failures leave it at zero.
func NewGCRA(rdb redis.Scripter, l limit.Limit) (*GCRA, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l.Precision = 0
	rl := redis_rate.Limit{Rate: int(l.Count), Burst: int(l.Count), Period: l.Window}
	g := &GCRA{rdb: rdb, limit: l, rl: rl}
	if t, ok := rdb.(interface {
		Time(context.Context) *redis.TimeCmd
	}); ok {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		g.offset = clockOffset(ctx, t.Time, 3)
		cancel()
	}
	return g, nil
}

// Name returns "gcra".
func (g *GCRA) Name() string { return "gcra" }

// Describe states the mapping and the clock, e.g. "rate 50 per 10s, burst
// 50 (redis_rate GCRA)".
func (g *GCRA) Describe() string {
	return fmt.Sprintf("rate %d per %s, burst %d (redis_rate GCRA)", g.rl.Rate, limit.FormatWindow(g.limit.Window), g.rl.Burst)
}

// Capabilities implements Limiter: an injected clock reaches the script
// through its TIME (see GCRA); AllowN takes a cost; TIME is read to the µs.
func (g *GCRA) Capabilities() Capabilities { return builtIn }

// Call implements Scripted: the EVALSHA redis_rate's AllowN makes, with
// redis_rate's own arguments (burst, rate, period in seconds, cost) on the
// key as given (redis_rate's "rate:" prefix is not added: ratelab's keys
// carry their own). With an injected clock the script is the rewritten one
// and DecidedAt the injected time (truncated to the µs); on RedisTime the
// script reads Redis TIME and DecidedAt is zero.
func (g *GCRA) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	if err := CheckCost(g.Name(), cost, g.limit.Count); err != nil {
		return ScriptCall{}, err
	}
	args := []any{g.rl.Burst, g.rl.Rate, g.rl.Period.Seconds(), cost}
	if now, ok := at.Injected(); ok {
		now = now.Truncate(time.Microsecond)
		return ScriptCall{Script: gcraVirtualScript.Run, Expiry: gcraVirtualScript.Expiry, Keys: []string{key}, Args: gcraVirtual.Args(now, args...), DecidedAt: now}, nil
	}
	return ScriptCall{Script: gcraScript.Run, Expiry: gcraScript.Expiry, Keys: []string{key}, Args: args}, nil
}

// Decode implements Scripted: redis_rate's reply (ParseGCRAReply), at the
// call's DecidedAt (zero on Redis TIME: the reply carries no time).
func (g *GCRA) Decode(c ScriptCall, reply any) (Decision, error) {
	d, err := ParseGCRAReply(reply)
	d.DecidedAt = c.DecidedAt
	return d, err
}

// Allow implements Limiter: the call Call describes, run by EVALSHA (EVAL
// on NOSCRIPT) on rdb and decoded by Decode. RetryAfter of a denial is the
// script's (float seconds, rounded to the µs); Remaining is its remaining.
// DecidedAt is the injected time, or on RedisTime the estimate described
// at GCRA.
func (g *GCRA) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	sent := time.Now()
	d, err := Decide(ctx, g.rdb, g, key, cost, at)
	recv := time.Now()
	if err != nil {
		return Decision{}, err
	}
	if _, ok := at.Injected(); !ok {
		d.DecidedAt = sent.Add(recv.Sub(sent) / 2).Add(g.offset).Truncate(time.Microsecond)
	}
	return d, nil
}

// ParseGCRAReply parses the reply of redis_rate's script, {allowed cost,
// remaining, "retry_after seconds", "reset_after seconds"}, e.g. for callers
// that queue GCRA's EVALSHA on a pipeline. DecidedAt is zero: the reply does
// not carry the time.
func ParseGCRAReply(v any) (Decision, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 4 {
		return Decision{}, fmt.Errorf("unexpected redis_rate reply %v: want {allowed, remaining, retry_after, reset_after}", v)
	}
	allowed, ok1 := arr[0].(int64)
	remaining, ok2 := arr[1].(int64)
	retry, ok3 := arr[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return Decision{}, fmt.Errorf("unexpected redis_rate reply %v: want {integer, integer, string, string}", v)
	}
	d := Decision{Allowed: allowed > 0, Remaining: max(remaining, 0)}
	if !d.Allowed {
		s, err := strconv.ParseFloat(retry, 64)
		if err != nil {
			return Decision{}, fmt.Errorf("unexpected redis_rate retry_after %q: %w", retry, err)
		}
		d.RetryAfter = max(time.Duration(s*float64(time.Second)).Round(time.Microsecond), 0)
	}
	return d, nil
}

// gcraScript is redis_rate's own AllowN script, for Scripts (SCRIPT LOAD
// before pipelines). Its source is taken from the library at init by one
// AllowN on a Scripter that answers NOSCRIPT, so redis_rate falls back to
// EVAL with the source: the same script and SHA the library runs.
var gcraScript = NewLuaScript(redisRateSource())

// gcraVirtual is redis_rate's script rewritten so that its TIME answers an
// appended argument (vclock.Rewrite); gcraVirtualScript runs it.
var (
	gcraVirtual       = mustVirtualTime(redisRateSource())
	gcraVirtualScript = NewTimeScript(gcraVirtual, redisRateSource())
)

func mustVirtualTime(src string) vclock.Script {
	v, err := vclock.Rewrite(src, vclock.Options{Time: true})
	if err != nil {
		panic("algorithms: redis_rate's script cannot take virtual time: " + err.Error())
	}
	return v
}

func redisRateSource() string {
	c := &sourceCatcher{}
	// the error is the catcher's own: the call is made only for the script it sends
	_, _ = redis_rate.NewLimiter(c).AllowN(context.Background(), "k", redis_rate.PerSecond(1), 1)
	if c.src == "" {
		panic("algorithms: could not read redis_rate's script")
	}
	return c.src
}

// sourceCatcher answers every EVALSHA with NOSCRIPT and records the script
// of the EVAL that follows.
type sourceCatcher struct{ src string }

func (c *sourceCatcher) Eval(_ context.Context, script string, _ []string, _ ...any) *redis.Cmd {
	c.src = script
	return redis.NewCmdResult(nil, fmt.Errorf("source caught"))
}

func (c *sourceCatcher) EvalSha(context.Context, string, []string, ...any) *redis.Cmd {
	return redis.NewCmdResult(nil, redis.ErrNoScript)
}

func (c *sourceCatcher) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.Eval(ctx, script, keys, args...)
}

func (c *sourceCatcher) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return c.EvalSha(ctx, sha1, keys, args...)
}

func (c *sourceCatcher) ScriptExists(context.Context, ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult([]bool{false}, nil)
}

func (c *sourceCatcher) ScriptLoad(context.Context, string) *redis.StringCmd {
	return redis.NewStringResult("", fmt.Errorf("source caught"))
}

func (c *sourceCatcher) Del(context.Context, ...string) *redis.IntCmd {
	return redis.NewIntResult(0, nil)
}

// clockOffset estimates the server's clock minus the local clock from
// samples TIME round trips (shortest round trip, server reading taken at its
// midpoint); zero when TIME fails.
func clockOffset(ctx context.Context, timeCmd func(context.Context) *redis.TimeCmd, samples int) time.Duration {
	best := time.Duration(-1)
	var offset time.Duration
	for range samples {
		sent := time.Now()
		st, err := timeCmd(ctx).Result()
		recv := time.Now()
		if err != nil {
			return 0
		}
		if rtt := recv.Sub(sent); best < 0 || rtt < best {
			best, offset = rtt, st.Sub(sent.Add(rtt/2))
		}
	}
	return offset
}
