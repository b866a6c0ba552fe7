package algorithms_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// The sliding-window counter on fixed instants (limit 10 per 10 s, so the
// previous window weighs (10 s - elapsed) / 10 s, one unit per second).
func TestSlidingCounterEdges(t *testing.T) {
	s := time.Second
	l10 := limit.Limit{Count: 10, Window: 10 * s}
	cases := []struct {
		name  string
		steps []step
	}{
		{
			// a full burst 1 s before the boundary: at the boundary the previous
			// window weighs 100% (10), at +1 s 90% (9) and one more fits, at +2 s
			// 80% (8) and another: 12 accepted within 3 s, 1.2x the limit
			name: "weighs the previous window by its overlap",
			steps: concat(
				repeat(10, step{at: -s, cost: 1, allowed: true}),
				[]step{
					// the current window is full: the next window, once 10 x (W-e)/W + 0 <= 9
					{at: -s, cost: 1, allowed: false, remain: 0, retry: 2 * s},
					{at: 0, cost: 1, allowed: false, remain: 0, retry: s},
					{at: s - time.Microsecond, cost: 1, allowed: false, remain: 0, retry: time.Microsecond},
					{at: s, cost: 1, allowed: true, remain: 0},
					{at: s, cost: 1, allowed: false, remain: 0, retry: s},
					{at: 2 * s, cost: 1, allowed: true, remain: 0},
				},
			),
		},
		{
			// the window before last weighs nothing
			name: "forgets the window before last",
			steps: concat(
				repeat(10, step{at: 0, cost: 1, allowed: true}),
				repeat(10, step{at: 20 * s, cost: 1, allowed: true}),
			),
		},
		{
			// weighted costs; at 12 s the previous 10 weigh 8
			name: "weighted Retry-After",
			steps: []step{
				{at: 0, cost: 6, allowed: true, remain: 4},
				{at: 5 * s, cost: 4, allowed: true, remain: 0},
				{at: 5 * s, cost: 1, allowed: false, remain: 0, retry: 6 * s}, // 10 x (W-1s)/W + 1 <= 10
				{at: 12 * s, cost: 3, allowed: false, remain: 2, retry: s},    // 8 + 3 fits once the weight is 7, at 13 s
				{at: 12 * s, cost: 2, allowed: true, remain: 0},
			},
		},
		{
			// cost = limit: only a window after an empty one takes it
			name: "cost equal to the limit waits two boundaries",
			steps: []step{
				{at: 3 * s, cost: 10, allowed: true, remain: 0},
				{at: 4 * s, cost: 10, allowed: false, remain: 0, retry: 16 * s},
				{at: 20 * s, cost: 10, allowed: true, remain: 0},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runSteps(t, newLimiter(t, "sliding-counter", l10), srv.Key(t), c.steps)
		})
	}
}

// The counter's worst case, measured: a burst at the end of one window, then
// a request whenever the estimate has room. Each unit of the previous
// window's weight that "leaves" is re-admitted while the burst is still
// inside the trailing window, so one window holds nearly 2L.
func TestSlidingCounterOverAdmits(t *testing.T) {
	const L = 20
	w := 10 * time.Second
	lim := newLimiter(t, "sliding-counter", limit.Limit{Count: L, Window: w})
	key := srv.Key(t)
	var accepted []measure.Event
	for at := -time.Millisecond; at < w; at += 100 * time.Millisecond {
		for {
			d, err := lim.Allow(ctx, key, 1, algorithms.At(b0.Add(at)))
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed {
				break
			}
			accepted = append(accepted, measure.Event{At: at, Cost: 1})
		}
	}
	got, _ := measure.MaxInWindow(accepted, w)
	// 20 at -1 ms, then one whenever the weight has fallen by a unit: 19 more
	// before the burst leaves the trailing window at 9.999 s
	if got != 2*L-1 {
		t.Errorf("max in one window = %d, want %d (2L-1)", got, 2*L-1)
	}
}

// Both counters share the key's hash tag and live until the end of the
// window after their own (between W and 2W).
func TestSlidingCounterKeys(t *testing.T) {
	w := 10 * time.Second
	lim := newLimiter(t, "sliding-counter", limit.Limit{Count: 5, Window: w})
	prefix := srv.Key(t) + ":"
	for i := 0; i < 3; i++ {
		if _, err := lim.Allow(ctx, prefix+"plain", 1, algorithms.RedisTime()); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := server.ScanKeys(ctx, srv.Client(), "{"+prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 1 || len(keys) > 2 {
		t.Fatalf("keys %v, want the current (and perhaps the previous) counter", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "{"+prefix+"plain}:") {
			t.Errorf("key %s: want {%splain}:<window number>", k, prefix)
		}
		ttl := srv.Client().PTTL(ctx, k).Val()
		if ttl <= w-time.Second || ttl > 2*w {
			t.Errorf("key %s: PTTL %v, want in (W, 2W]", k, ttl)
		}
	}
}

// gcra is redis_rate itself: 5 per 10 s with burst 5 on the Redis clock, the
// 6th denied with redis_rate's Retry-After (one emission interval, 2 s, less
// the time since the burst), on the caller's own key with redis_rate's TTL.
func TestGCRAIsRedisRate(t *testing.T) {
	w := 10 * time.Second
	lim := newLimiter(t, "gcra", limit.Limit{Count: 5, Window: w})
	if got, want := lim.Describe(), "rate 5 per 10s, burst 5 (redis_rate GCRA)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	key := srv.Key(t) + ":{u}"
	for i := 0; i < 6; i++ {
		d, err := lim.Allow(ctx, key, 1, algorithms.RedisTime())
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 5; d.Allowed != want {
			t.Fatalf("call %d: allowed=%v, want %v", i, d.Allowed, want)
		}
		if off := time.Since(d.DecidedAt); off > time.Second || off < -time.Second {
			t.Fatalf("DecidedAt %v is %v from the local clock", d.DecidedAt, off)
		}
		if i == 4 && d.Remaining != 0 {
			t.Errorf("5th call: Remaining %d, want 0", d.Remaining)
		}
		if i == 5 && (d.RetryAfter <= time.Second || d.RetryAfter > 2*time.Second) {
			t.Errorf("6th call: RetryAfter %v, want just under 2s", d.RetryAfter)
		}
	}
	// the key is the caller's (no "rate:" prefix), so run-prefix SCANs find it
	keys, err := server.ScanKeys(ctx, srv.Client(), srv.Key(t)[:len("test:")])
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range keys {
		found = found || k == key
	}
	if !found || srv.Client().Exists(ctx, "rate:"+key).Val() != 0 {
		t.Fatalf("key %s not found as written (or written as rate:%s)", key, key)
	}
	if ttl := srv.Client().TTL(ctx, key).Val(); ttl <= 0 || ttl > w {
		t.Errorf("TTL %v, want in (0, %v]", ttl, w)
	}
}

// The script ratelab loads ahead of pipelines (algorithms.Scripts) is the
// one redis_rate runs: after SCRIPT FLUSH, one gcra decision caches exactly
// one of them.
func TestGCRAScriptIsTheLibrarys(t *testing.T) {
	if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	lim := newLimiter(t, "gcra", limit.Limit{Count: 5, Window: time.Second})
	if _, err := lim.Allow(ctx, srv.Key(t), 1, algorithms.RedisTime()); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, s := range algorithms.Scripts() {
		hashes = append(hashes, s.Hash())
	}
	n := 0
	for _, ok := range srv.Client().ScriptExists(ctx, hashes...).Val() {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of algorithms.Scripts() cached after one gcra decision, want 1 (redis_rate's own)", n)
	}
}

// gcra takes an injected clock: an hour later on the caller's
// clock is an hour later for redis_rate's script, whose TIME answers the
// injected time; DecidedAt is that time.
func TestGCRATakesInjectedClock(t *testing.T) {
	lim := newLimiter(t, "gcra", limit.Limit{Count: 2, Window: time.Hour})
	key := srv.Key(t)
	for i, c := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {0, true}, {time.Second, false}, // the burst of 2, then nothing for W/L = 30 min
		{31 * time.Minute, true}, {2 * time.Hour, true}, {2 * time.Hour, true}, {2 * time.Hour, false},
	} {
		d, err := lim.Allow(ctx, key, 1, algorithms.At(b0.Add(c.at)))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != c.want {
			t.Errorf("call %d (injected +%v): allowed=%v, want %v", i, c.at, d.Allowed, c.want)
		}
		if !d.DecidedAt.Equal(b0.Add(c.at)) {
			t.Errorf("call %d: DecidedAt %v, want the injected time %v", i, d.DecidedAt, b0.Add(c.at))
		}
	}
	if c := lim.Capabilities(); !c.InjectsTime || !c.TakesCost {
		t.Errorf("gcra must declare InjectsTime and TakesCost, got %+v", c)
	}
}

// A Scripter that answers with something else than redis_rate's reply gives
// an error, never a panic in the library's type assertions.
func TestGCRAOddReply(t *testing.T) {
	lim, err := algorithms.NewGCRA(oddScripter{srv.Client()}, limit.Limit{Count: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Allow(context.Background(), srv.Key(t), 1, algorithms.RedisTime()); err == nil {
		t.Error("a reply of the wrong shape gave no error")
	}
	d, err := algorithms.ParseGCRAReply([]any{int64(0), int64(0), "1.5", "3"})
	if err != nil || d.Allowed || d.RetryAfter != 1500*time.Millisecond {
		t.Errorf("ParseGCRAReply: %+v, %v", d, err)
	}
}

// oddScripter runs every script as "return 'nope'".
type oddScripter struct{ *redis.Client }

func (o oddScripter) EvalSha(ctx context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return o.Client.Eval(ctx, "return 'nope'", keys)
}

func (o oddScripter) Eval(ctx context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return o.Client.Eval(ctx, "return 'nope'", keys)
}
