package algorithms_test

import (
	"context"
	"testing"
	"time"

	redis_rate "github.com/go-redis/redis_rate/v10"
	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

// GCRA on an injected clock follows it step by step: the burst, one unit
// per emission interval (200 ms), a step back in time denied (the TAT is
// ahead), a full burst again far ahead; after SCRIPT FLUSH the rewritten
// script is sent again.
func TestGCRAVirtualSteps(t *testing.T) {
	g, err := algorithms.NewGCRA(srv.Client(), limit.Limit{Count: 5, Window: time.Second}) // one unit every 200 ms
	if err != nil {
		t.Fatal(err)
	}
	key := srv.Key(t)
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
		d, err := g.Allow(t.Context(), key, 1, algorithms.At(vt0.Add(s.at)))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if d.Allowed != s.allowed {
			t.Errorf("step %d at vt0%+v: allowed %v, want %v (remaining %d, retry after %v)", i, s.at, d.Allowed, s.allowed, d.Remaining, d.RetryAfter)
		}
		if i == 5 && (d.RetryAfter < 199*time.Millisecond || d.RetryAfter > 201*time.Millisecond) {
			t.Errorf("step %d: retry after %v, want 200ms", i, d.RetryAfter)
		}
	}
	if err := srv.Client().ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := g.Allow(t.Context(), key, 1, algorithms.At(vt0.Add(2*time.Hour))); err != nil || !d.Allowed {
		t.Errorf("after SCRIPT FLUSH: got %+v, %v, want allowed", d, err)
	}
}

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

// On Redis TIME, GCRA decides as redis_rate's own AllowN: the same costs
// sent to both, each on a key of its own, give the same verdicts and
// remainders, and retry-afters that differ only by the time between the
// two calls. An emission interval of 12 min makes that time irrelevant to
// the verdicts.
func TestGCRADecidesAsRedisRate(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Hour}
	g, err := algorithms.NewGCRA(srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	lib := redis_rate.NewLimiter(srv.Client())
	rl := redis_rate.Limit{Rate: 5, Burst: 5, Period: time.Hour}
	ours, theirs := srv.Key(t)+":ours", srv.Key(t)+":theirs" // redis_rate writes rate:<key>
	t.Cleanup(func() { srv.Client().Del(context.Background(), "rate:"+theirs) })
	for i, cost := range []int64{1, 2, 1, 3, 1, 1, 5, 2} {
		d, err := g.Allow(t.Context(), ours, cost, algorithms.RedisTime())
		if err != nil {
			t.Fatal(err)
		}
		res, err := lib.AllowN(t.Context(), theirs, rl, int(cost))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != (res.Allowed > 0) || d.Remaining != int64(max(res.Remaining, 0)) {
			t.Errorf("call %d (cost %d): ratelab allowed=%v remaining=%d, redis_rate allowed=%d remaining=%d",
				i, cost, d.Allowed, d.Remaining, res.Allowed, res.Remaining)
		}
		if want := max(res.RetryAfter, 0); !d.Allowed && (d.RetryAfter-want > time.Second || want-d.RetryAfter > time.Second) {
			t.Errorf("call %d: RetryAfter %v, redis_rate %v", i, d.RetryAfter, res.RetryAfter)
		}
	}
}
