package algorithms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	redis_rate "github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

func TestVirtualTimeScripterRedisRate(t *testing.T) {
	vs := algorithms.NewVirtualTimeScripter(srv.Client())
	lim := redis_rate.NewLimiter(vs)
	key := srv.Key(t)
	rl := redis_rate.Limit{Rate: 5, Burst: 5, Period: time.Second} // one unit every 200 ms
	steps := []struct {
		at      time.Duration // from vt0
		allowed bool
	}{
		{0, true}, {0, true}, {0, true}, {0, true}, {0, true}, // the burst
		{0, false},
		{199 * time.Millisecond, false},
		{201 * time.Millisecond, true},
		{202 * time.Millisecond, false},
		{-time.Hour, false}, // back in virtual time: the TAT is ahead
		{time.Hour, true},   // far ahead: a full burst again
		{time.Hour, true}, {time.Hour, true}, {time.Hour, true}, {time.Hour, true},
		{time.Hour, false},
	}
	for i, s := range steps {
		now := vt0.Add(s.at)
		res, err := lim.Allow(algorithms.WithVirtualNow(t.Context(), now), key, rl)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := res.Allowed > 0; got != s.allowed {
			t.Errorf("step %d at vt0%+v: allowed %v, want %v (remaining %d, retry after %v)", i, s.at, got, s.allowed, res.Remaining, res.RetryAfter)
		}
		if i == 5 && (res.RetryAfter < 199*time.Millisecond || res.RetryAfter > 201*time.Millisecond) {
			t.Errorf("step %d: retry after %v, want 200ms", i, res.RetryAfter)
		}
	}
	// redis_rate ran EVALSHA of its own script's SHA1: the scripter maps it
	src := redisRateSource(t)
	exists, err := vs.ScriptExists(t.Context(), redis.NewScript(src).Hash(), "0000000000000000000000000000000000000000").Result()
	if err != nil || len(exists) != 2 || !exists[0] || exists[1] {
		t.Errorf("ScriptExists: got %v, %v, want [true false]", exists, err)
	}
	if sha, err := vs.ScriptLoad(t.Context(), src).Result(); err != nil || sha != redis.NewScript(src).Hash() {
		t.Errorf("ScriptLoad: got %q, %v, want the original's SHA1", sha, err)
	}
	// after SCRIPT FLUSH the server answers NOSCRIPT to the rewritten
	// script's SHA1: the scripter sends its source once
	if err := srv.Client().ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if res, err := lim.Allow(algorithms.WithVirtualNow(t.Context(), vt0.Add(2*time.Hour)), key, rl); err != nil || res.Allowed != 1 {
		t.Errorf("after SCRIPT FLUSH: got %+v, %v, want allowed", res, err)
	}
	if err := lim.Reset(t.Context(), key); err != nil {
		t.Errorf("Reset: %v", err)
	}
	// no time in the context: an error, never Redis TIME
	if _, err := lim.Allow(t.Context(), key, rl); !errors.Is(err, algorithms.ErrNoVirtualNow) {
		t.Errorf("no virtual time: got %v, want ErrNoVirtualNow", err)
	}
}

// redisRateSource catches redis_rate's script source the way redis_rate
// sends it: EVALSHA refused, then EVAL with the source.
func redisRateSource(t *testing.T) string {
	t.Helper()
	c := &catcher{}
	_, _ = redis_rate.NewLimiter(c).Allow(t.Context(), "k", redis_rate.PerSecond(1))
	if c.src == "" {
		t.Fatal("redis_rate's source not caught")
	}
	return c.src
}

type catcher struct {
	redis.Scripter
	src string
}

func (c *catcher) EvalSha(_ context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return redis.NewCmdResult(nil, redis.ErrNoScript)
}

func (c *catcher) Eval(_ context.Context, src string, _ []string, _ ...any) *redis.Cmd {
	c.src = src
	return redis.NewCmdResult(nil, errors.New("caught"))
}

func (c *catcher) Del(context.Context, ...string) *redis.IntCmd { return redis.NewIntResult(0, nil) }

// gcraModel is GCRA in integer µs: rate one per t, burst b.
type gcraModel struct {
	tat  int64
	t, b int64
}

func (m *gcraModel) allow(now int64) bool {
	tat := max(m.tat, now)
	if tat+m.t-m.b*m.t > now {
		return false
	}
	m.tat = tat + m.t
	return true
}

func TestVirtualGCRAFollowsVirtualTime(t *testing.T) {
	const L = 5
	W := time.Second
	g, err := algorithms.NewGCRA(srv.Client(), limit.Limit{Count: L, Window: W})
	if err != nil {
		t.Fatal(err)
	}
	key := srv.Key(t)
	m := &gcraModel{t: int64(W/time.Microsecond) / L, b: L}
	// every 37 ms for 5.5 virtual seconds (replayed in a few ms of real
	// time): never exactly on an emission instant of the 200 ms grid, so
	// the script's float seconds and the model's integer µs agree
	accepted := 0
	for i := range 150 {
		now := vt0.Add(time.Duration(i) * 37 * time.Millisecond)
		d, err := g.Allow(t.Context(), key, 1, algorithms.At(now))
		if err != nil {
			t.Fatal(err)
		}
		if want := m.allow(now.UnixMicro()); d.Allowed != want {
			t.Fatalf("step %d at +%v: allowed %v, model %v", i, now.Sub(vt0), d.Allowed, want)
		}
		if !d.DecidedAt.Equal(now.Truncate(time.Microsecond)) {
			t.Errorf("step %d: DecidedAt %v, want %v", i, d.DecidedAt, now)
		}
		if d.Allowed {
			accepted++
		}
	}
	// a burst of L, then one per 200 ms over the remaining 5.513 s
	if want := L + 27; accepted != want {
		t.Errorf("accepted %d, want %d", accepted, want)
	}
}

// vt0 is a virtual instant far from the real clock, with a µs part that has
// leading zeros.
var vt0 = time.Date(2031, 3, 4, 5, 6, 7, 123_000, time.UTC)
