package algorithms

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
// Clock: redis_rate's script reads Redis TIME. With an injected clock
// (virtual or client) the script runs rewritten by vclock.Rewrite, so its
// TIME answers the injected time, exactly, and the library runs unchanged
// through VirtualTimeScripter: GCRA takes virtual time like every other
// algorithm, and DecidedAt is the injected time. With RedisTime it runs as
// published on Redis TIME, and DecidedAt is an estimate (redis_rate does not
// return the time it used): the midpoint of the call on the local clock plus
// the server's clock offset, measured once at construction from TIME round
// trips when rdb can run TIME; error about half a round trip.
//
// Keys: redis_rate names its key "rate:" + key. The adapter hands the
// library's script the caller's key without that prefix, so every key it
// writes starts with the caller's prefix ("ratelab:<run id>:…") and
// ratelab's SCAN-based memory measurement and cleanup find it. The key's TTL
// is redis_rate's: EX ceil(time to reset) seconds (at most W rounded up to
// a second), a relative TTL that counts down on Redis's own clock also when
// the decisions are on virtual time. Memory: one STRING per active key.
type GCRA struct {
	rdb    redis.Scripter
	limit  limit.Limit
	rl     redis_rate.Limit
	lim    *redis_rate.Limiter // on Redis TIME
	vlim   *redis_rate.Limiter // on the injected time (the script rewritten)
	offset time.Duration       // Redis server clock minus local clock
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
	g := &GCRA{rdb: rdb, limit: l, rl: rl, lim: redis_rate.NewLimiter(rateScripter{rdb}),
		vlim: redis_rate.NewLimiter(NewVirtualTimeScripter(rateScripter{rdb}))}
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
// 50 (redis_rate GCRA; Redis TIME, ignores injected clocks)".
func (g *GCRA) Describe() string {
	return fmt.Sprintf("rate %d per %s, burst %d (redis_rate GCRA)", g.rl.Rate, limit.FormatWindow(g.limit.Window), g.rl.Burst)
}

// Capabilities implements Limiter: an injected clock reaches the script
// through its TIME (see GCRA); AllowN takes a cost; TIME is read to the µs.
func (g *GCRA) Capabilities() Capabilities { return builtIn }

// Call implements Scripted: the EVALSHA redis_rate's AllowN makes, with
// redis_rate's own arguments (burst, rate, period in seconds, cost) on the
// key as given (redis_rate's "rate:" prefix is not added: ratelab's keys
// carry their own). The script reads Redis TIME, so DecidedAt is zero.
func (g *GCRA) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	if err := checkCost(g.Name(), cost, g.limit.Count); err != nil {
		return ScriptCall{}, err
	}
	args := []any{g.rl.Burst, g.rl.Rate, g.rl.Period.Seconds(), cost}
	if now, ok := at.Injected(); ok {
		now = now.Truncate(time.Microsecond)
		return ScriptCall{Script: gcraVirtualScript.run, Expiry: gcraVirtualScript.expiry, Keys: []string{key}, Args: gcraVirtual.Args(now, args...), DecidedAt: now}, nil
	}
	return ScriptCall{Script: gcraScript.run, Expiry: gcraScript.expiry, Keys: []string{key}, Args: args}, nil
}

// Decode implements Scripted: redis_rate's reply (ParseGCRAReply), at the
// call's DecidedAt (zero on Redis TIME: the reply carries no time).
func (g *GCRA) Decode(c ScriptCall, reply any) (Decision, error) {
	d, err := ParseGCRAReply(reply)
	d.DecidedAt = c.DecidedAt
	return d, err
}

// Allow implements Limiter with redis_rate's AllowN. RetryAfter of a denial
// is redis_rate's (float seconds, rounded to the µs); Remaining is its
// Remaining. The clock is ignored for the decision (see GCRA).
func (g *GCRA) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	if err := checkCost(g.Name(), cost, g.limit.Count); err != nil {
		return Decision{}, err
	}
	lim, injected := g.lim, false
	now, ok := at.Injected()
	if ok {
		now, injected = now.Truncate(time.Microsecond), true
		ctx, lim = WithVirtualNow(ctx, now), g.vlim
	}
	sent := time.Now()
	res, err := lim.AllowN(ctx, key, g.rl, int(cost))
	recv := time.Now()
	if err != nil {
		return Decision{}, fmt.Errorf("%s: %w", g.Name(), err)
	}
	d := Decision{Allowed: res.Allowed > 0, Remaining: max(int64(res.Remaining), 0), DecidedAt: now}
	if !injected {
		d.DecidedAt = sent.Add(recv.Sub(sent) / 2).Add(g.offset).Truncate(time.Microsecond)
	}
	if !d.Allowed && res.RetryAfter > 0 {
		d.RetryAfter = res.RetryAfter.Round(time.Microsecond)
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

// rateKeyPrefix is what redis_rate prepends to every key.
const rateKeyPrefix = "rate:"

// rateScripter is the redis_rate "rediser" over a redis.Scripter. It passes
// the library's script calls through with the caller's own key (without
// redis_rate's "rate:" prefix) and checks the reply's shape, so that a
// Scripter that answers something else (a pipeline that queues calls and
// answers a placeholder) gives an error instead of a panic in redis_rate's
// type assertions; integer placeholders in the two string fields are passed
// on as decimal strings. Del (redis_rate's Reset) is not supported.
type rateScripter struct{ s redis.Scripter }

func ownKeys(keys []string) []string {
	out := append([]string(nil), keys...)
	for i, k := range out {
		out[i] = strings.TrimPrefix(k, rateKeyPrefix)
	}
	return out
}

func checkRateReply(c *redis.Cmd) *redis.Cmd {
	if c.Err() != nil {
		return c
	}
	arr, ok := c.Val().([]any)
	if ok && len(arr) == 4 {
		_, ok0 := arr[0].(int64)
		_, ok1 := arr[1].(int64)
		if ok0 && ok1 {
			fixed := append([]any(nil), arr...)
			for i := 2; i < 4 && ok; i++ {
				switch x := fixed[i].(type) {
				case string:
				case int64:
					fixed[i] = strconv.FormatInt(x, 10)
				default:
					ok = false
				}
			}
			if ok {
				return redis.NewCmdResult(fixed, nil)
			}
		}
	}
	return redis.NewCmdResult(nil, fmt.Errorf("unexpected redis_rate reply %v", c.Val()))
}

func (r rateScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return checkRateReply(r.s.Eval(ctx, script, ownKeys(keys), args...))
}

func (r rateScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return checkRateReply(r.s.EvalSha(ctx, sha1, ownKeys(keys), args...))
}

func (r rateScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return checkRateReply(r.s.EvalRO(ctx, script, ownKeys(keys), args...))
}

func (r rateScripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return checkRateReply(r.s.EvalShaRO(ctx, sha1, ownKeys(keys), args...))
}

func (r rateScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return r.s.ScriptExists(ctx, hashes...)
}

func (r rateScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return r.s.ScriptLoad(ctx, script)
}

func (r rateScripter) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return redis.NewIntResult(0, fmt.Errorf("gcra: Reset is not supported (keys expire on their own)"))
}

// gcraScript is redis_rate's own AllowN script, for Scripts (SCRIPT LOAD
// before pipelines). Its source is taken from the library at init by one
// AllowN on a Scripter that answers NOSCRIPT, so redis_rate falls back to
// EVAL with the source: the same script and SHA the library runs.
var gcraScript = newScript(redisRateSource())

// gcraVirtual is redis_rate's script rewritten so that its TIME answers an
// appended argument (vclock.Rewrite); gcraVirtualScript runs it.
var (
	gcraVirtual       = mustVirtualTime(redisRateSource())
	gcraVirtualScript = newTimeScript(gcraVirtual, redisRateSource())
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
