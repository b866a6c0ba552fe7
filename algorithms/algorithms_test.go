package algorithms_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// b0 is a window boundary for every window used here (a multiple of 1 h since the epoch).
var b0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var ctx = context.Background()

func newLimiter(t *testing.T, name string, l limit.Limit) algorithms.Limiter {
	t.Helper()
	lim, err := algorithms.New(name, srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// step is one call and what it must answer.
type step struct {
	at      time.Duration // from b0
	cost    int64
	allowed bool
	remain  int64
	retry   time.Duration // checked when denied
}

func runSteps(t *testing.T, lim algorithms.Limiter, key string, steps []step) {
	t.Helper()
	for i, s := range steps {
		d, err := lim.Allow(ctx, key, s.cost, algorithms.At(b0.Add(s.at)))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if d.Allowed != s.allowed || d.Remaining != s.remain {
			t.Fatalf("step %d (at %v cost %d): got allowed=%v remaining=%d, want allowed=%v remaining=%d",
				i, s.at, s.cost, d.Allowed, d.Remaining, s.allowed, s.remain)
		}
		if !s.allowed && d.RetryAfter != s.retry {
			t.Fatalf("step %d (at %v): got RetryAfter %v, want %v", i, s.at, d.RetryAfter, s.retry)
		}
		if s.allowed && d.RetryAfter != 0 {
			t.Fatalf("step %d: allowed with RetryAfter %v, want 0", i, d.RetryAfter)
		}
		if want := b0.Add(s.at).Truncate(time.Microsecond); !d.DecidedAt.Equal(want) {
			t.Fatalf("step %d: DecidedAt %v, want the injected %v", i, d.DecidedAt, want)
		}
	}
}

func repeat(n int, s step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
		if s.allowed {
			out[i].remain = s.remain + int64(n-1-i)*s.cost
		}
	}
	return out
}

func concat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestWindowEdges(t *testing.T) {
	ms, s := time.Millisecond, time.Second
	w10 := limit.Limit{Count: 3, Window: 10 * s}
	cases := []struct {
		name  string
		algo  string
		limit limit.Limit
		steps []step
	}{
		{
			// a full burst 1 ms before the boundary and another at it: 2x the limit in 1 ms
			name: "fixed-window resets at the boundary", algo: "fixed-window", limit: w10,
			steps: concat(
				repeat(3, step{at: -ms, cost: 1, allowed: true}),
				[]step{{at: -ms, cost: 1, allowed: false, remain: 0, retry: ms}},
				repeat(3, step{at: 0, cost: 1, allowed: true}),
				[]step{{at: 9*s + 999*ms, cost: 1, allowed: false, remain: 0, retry: ms}},
			),
		},
		{
			// the entries of -1s leave the window at exactly +9s: (t-W, t] is half-open
			name: "sliding-log holds across the boundary", algo: "sliding-log", limit: w10,
			steps: concat(
				repeat(3, step{at: -s, cost: 1, allowed: true}),
				[]step{
					{at: 0, cost: 1, allowed: false, remain: 0, retry: 9 * s},
					{at: 9*s - time.Microsecond, cost: 1, allowed: false, remain: 0, retry: time.Microsecond},
					{at: 9 * s, cost: 1, allowed: true, remain: 2},
				},
			),
		},
		{
			// precision 1s: a block is dropped whole, 9.5 s after units accepted at -0.5s
			name: "bucketed-hash drops a block early", algo: "bucketed-hash",
			limit: limit.Limit{Count: 3, Window: 10 * s, Precision: s},
			steps: concat(
				repeat(3, step{at: -500 * ms, cost: 1, allowed: true}),
				[]step{
					{at: 0, cost: 1, allowed: false, remain: 0, retry: 9 * s},
					{at: 8*s + 999*ms, cost: 1, allowed: false, remain: 0, retry: ms},
				},
				repeat(3, step{at: 9 * s, cost: 1, allowed: true}),
			),
		},
		{
			// capacity 3, refill 3 per 10 s: one unit every 3.333 s
			name: "reservoir refills continuously", algo: "reservoir", limit: w10,
			steps: concat(
				repeat(3, step{at: -s, cost: 1, allowed: true}),
				[]step{
					{at: -s, cost: 1, allowed: false, remain: 0, retry: 3333334 * time.Microsecond},
					{at: 2*s + 333333*time.Microsecond, cost: 1, allowed: false, remain: 0, retry: time.Microsecond},
					{at: 2*s + 333334*time.Microsecond, cost: 1, allowed: true, remain: 0},
				},
			),
		},
		{
			// Retry-After is exact for weighted costs: wait for as many oldest units as needed
			name: "sliding-log weighted Retry-After", algo: "sliding-log",
			limit: limit.Limit{Count: 10, Window: 10 * s},
			steps: []step{
				{at: 0, cost: 5, allowed: true, remain: 5},
				{at: 2 * s, cost: 5, allowed: true, remain: 0},
				{at: 3 * s, cost: 6, allowed: false, remain: 0, retry: 9 * s},  // the 6th oldest unit is at 2s
				{at: 3 * s, cost: 5, allowed: false, remain: 0, retry: 7 * s},  // the 5th oldest is at 0s
				{at: 10 * s, cost: 6, allowed: false, remain: 5, retry: 2 * s}, // the 0s units have left
				{at: 10 * s, cost: 5, allowed: true, remain: 0},
			},
		},
		{
			name: "fixed-window weighted", algo: "fixed-window",
			limit: limit.Limit{Count: 10, Window: 10 * s},
			steps: []step{
				{at: 0, cost: 7, allowed: true, remain: 3},
				{at: s, cost: 4, allowed: false, remain: 3, retry: 9 * s},
				{at: s, cost: 3, allowed: true, remain: 0},
			},
		},
		{
			name: "bucketed-hash weighted Retry-After", algo: "bucketed-hash",
			limit: limit.Limit{Count: 10, Window: 10 * s, Precision: s},
			steps: []step{
				{at: 0, cost: 4, allowed: true, remain: 6},
				{at: 3500 * ms, cost: 6, allowed: true, remain: 0},
				{at: 5 * s, cost: 5, allowed: false, remain: 0, retry: 8 * s}, // block 3 goes at 13 s
				{at: 5 * s, cost: 4, allowed: false, remain: 0, retry: 5 * s}, // block 0 goes at 10 s
				{at: 10 * s, cost: 4, allowed: true, remain: 0},
			},
		},
		{
			name: "reservoir weighted", algo: "reservoir",
			limit: limit.Limit{Count: 10, Window: 10 * s},
			steps: []step{
				{at: 0, cost: 8, allowed: true, remain: 2},
				{at: s, cost: 4, allowed: false, remain: 3, retry: s},
				{at: 2 * s, cost: 4, allowed: true, remain: 0},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runSteps(t, newLimiter(t, c.algo, c.limit), srv.Key(t), c.steps)
		})
	}
}

// Carlson's multi-limit hash: the 1 s limit and the 60 s limit both hold.
func TestBucketedHashSeveralLimits(t *testing.T) {
	lim, err := algorithms.NewBucketedHash(srv.Client(),
		limit.Limit{Count: 10, Window: time.Second, Precision: 100 * time.Millisecond},
		limit.Limit{Count: 120, Window: time.Minute, Precision: time.Second},
		limit.Limit{Count: 240, Window: time.Hour, Precision: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	key := srv.Key(t)
	allowedAt := map[int]int{}
	for sec := 0; sec < 15; sec++ {
		for i := 0; i < 12; i++ {
			d, err := lim.Allow(ctx, key, 1, algorithms.At(b0.Add(time.Duration(sec)*time.Second+time.Duration(i)*time.Millisecond)))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				allowedAt[sec]++
			}
		}
	}
	for sec := 0; sec < 15; sec++ {
		want := 10 // the 1 s limit
		if sec >= 12 {
			want = 0 // 120 accepted in the first 12 s: the 60 s limit is full
		}
		if allowedAt[sec] != want {
			t.Errorf("second %d: %d allowed, want %d", sec, allowedAt[sec], want)
		}
	}
	if got := lim.Describe(); got != "10 per 1s (precision 100ms), 120 per 1m (precision 1s), 240 per 1h (precision 1m)" {
		t.Errorf("Describe = %q", got)
	}
}

// cost > limit is refused before any Redis call: this client points nowhere.
func TestCostOverLimitNeedsNoRedis(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer dead.Close()
	for _, name := range algorithms.Names() {
		lim, err := algorithms.New(name, dead, limit.Limit{Count: 5, Window: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, cost := range []int64{6, 0, -1} {
			_, err := lim.Allow(ctx, "k", cost, algorithms.At(b0))
			if !errors.Is(err, algorithms.ErrCostExceedsLimit) {
				t.Errorf("%s cost %d: got %v, want ErrCostExceedsLimit", name, cost, err)
			}
		}
		// and a real call to the dead address fails with a network error, not a verdict
		if _, err := lim.Allow(ctx, "k", 1, algorithms.At(b0)); err == nil || errors.Is(err, algorithms.ErrCostExceedsLimit) {
			t.Errorf("%s: a call to a dead Redis returned %v", name, err)
		}
	}
}

func TestUnknownAlgorithmAndBadLimit(t *testing.T) {
	if _, err := algorithms.New("leaky", srv.Client(), limit.Limit{Count: 1, Window: time.Second}); err == nil {
		t.Error("unknown algorithm: no error")
	}
	for _, l := range []limit.Limit{{Count: 0, Window: time.Second}, {Count: 1, Window: 0}, {Count: 1, Window: time.Second, Precision: 2 * time.Second}} {
		for _, name := range algorithms.Names() {
			if _, err := algorithms.New(name, srv.Client(), l); err == nil {
				t.Errorf("%s %+v: no error", name, l)
			}
		}
	}
}

// Every key an algorithm writes has a TTL no longer than its window, and the
// Redis TIME clock gives a DecidedAt near the local clock.
func TestRedisTimeAndTTL(t *testing.T) {
	for _, name := range algorithms.Names() {
		t.Run(name, func(t *testing.T) {
			w := 30 * time.Second
			lim := newLimiter(t, name, limit.Limit{Count: 5, Window: w})
			prefix := srv.Key(t) + ":"
			for i := 0; i < 7; i++ {
				d, err := lim.Allow(ctx, prefix+"{u}", 1, algorithms.RedisTime())
				if err != nil {
					t.Fatal(err)
				}
				if off := time.Since(d.DecidedAt); off > time.Second || off < -time.Second {
					t.Fatalf("DecidedAt %v is %v from the local clock", d.DecidedAt, off)
				}
				if want := i < 5; d.Allowed != want && name != "reservoir" {
					t.Fatalf("call %d: allowed=%v, want %v", i, d.Allowed, want)
				}
			}
			keys, err := server.ScanKeys(ctx, srv.Client(), prefix)
			if err != nil || len(keys) == 0 {
				t.Fatalf("keys %v, %v", keys, err)
			}
			// a sliding counter reads the previous window's count until the next one ends
			maxTTL := w
			if name == "sliding-counter" {
				maxTTL = 2 * w
			}
			for _, k := range keys {
				ttl := srv.Client().PTTL(ctx, k).Val()
				if ttl <= 0 || ttl > maxTTL {
					t.Errorf("key %s: PTTL %v, want in (0, %v]", k, ttl, maxTTL)
				}
			}
		})
	}
}

// 64 goroutines on one key at one instant: exactly the limit is accepted,
// never more (every algorithm is atomic per key).
func TestConcurrentClientsOneKey(t *testing.T) {
	clocks := map[string]func() algorithms.Clock{
		"injected same instant": func() algorithms.Clock { return algorithms.At(b0) },
		"redis time":            algorithms.RedisTime,
	}
	for _, name := range algorithms.Names() {
		for cname, clock := range clocks {
			if cname == "redis time" && name != "sliding-log" {
				continue // a real-time run could cross a fixed boundary or refill
			}
			t.Run(name+"/"+cname, func(t *testing.T) {
				const count, goroutines, each = 100, 64, 5
				lim := newLimiter(t, name, limit.Limit{Count: count, Window: time.Hour})
				key := srv.Key(t)
				var mu sync.Mutex
				accepted := 0
				var wg sync.WaitGroup
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < each; i++ {
							d, err := lim.Allow(ctx, key, 1, clock())
							if err != nil {
								t.Error(err)
								return
							}
							if d.Allowed {
								mu.Lock()
								accepted++
								mu.Unlock()
							}
						}
					}()
				}
				wg.Wait()
				if accepted != count {
					t.Errorf("%d goroutines x %d calls: %d accepted, want exactly %d", goroutines, each, accepted, count)
				}
			})
		}
	}
}

// fixed-window's counters share the key's hash tag (one Cluster slot).
func TestFixedWindowKeysAreHashTagged(t *testing.T) {
	lim := newLimiter(t, "fixed-window", limit.Limit{Count: 5, Window: 10 * time.Second})
	prefix := srv.Key(t) + ":"
	for _, k := range []string{prefix + "{user}", prefix + "plain"} {
		if _, err := lim.Allow(ctx, k, 1, algorithms.At(b0)); err != nil {
			t.Fatal(err)
		}
	}
	n := ":" + itoa(b0.Unix()/10)
	for _, want := range []string{prefix + "{user}" + n, "{" + prefix + "plain}" + n} {
		if srv.Client().Exists(ctx, want).Val() != 1 {
			t.Errorf("key %s does not exist", want)
		}
	}
	if got := algorithms.HashTagged("a{b}c"); got != "a{b}c" {
		t.Errorf("HashTagged kept tag: %q", got)
	}
	if got := algorithms.HashTagged("a{}c"); got != "{a{}c}" {
		t.Errorf("HashTagged empty tag: %q", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
