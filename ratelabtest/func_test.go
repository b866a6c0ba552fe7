package ratelabtest

import (
	"context"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/measure"
)

// redisRate is go-redis/redis_rate, unchanged, as a Func: GCRA at 10 per
// second with the given burst, the request's cost as its n.
func redisRate(burst int) Func {
	return func(ctx context.Context, rdb redis.UniversalClient, req Request) (bool, error) {
		res, err := redis_rate.NewLimiter(rdb).AllowN(ctx, req.Key, redis_rate.Limit{Rate: 10, Period: time.Second, Burst: burst}, int(req.Cost))
		if err != nil {
			return false, err
		}
		return res.Allowed > 0, nil
	}
}

// go-redis/redis_rate runs unchanged on the endpoint's virtual clock: a
// burst of L admits close to 2L in a trailing window; a burst of 1 with
// requests of cost 1 holds (a request of cost 2 never fits a burst of 1:
// starved, so the burst-1 case is verified with unit costs).
func TestVerifyFuncRedisRate(t *testing.T) {
	noEnvRedis(t)
	rd := Redis(t)
	cases := []struct {
		name      string
		burst     int
		unitCost  bool
		want      measure.Verdict
		min, max  float64 // the report's worst ratio
		wantError bool
	}{
		{"burst L", 10, false, measure.Violated, 1.9, 2.1, true},
		{"burst 1, cost 1", 1, true, measure.Holds, 0, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rep *measure.VerifyReport
			start := time.Now()
			r := record(t, func(tb testing.TB) {
				rep = VerifyFuncOn(tb, rd, FuncTarget{Fn: redisRate(tc.burst), UnitCost: tc.unitCost}, "10/1s")
			})
			t.Logf("verify took %v", time.Since(start))
			if len(r.fatals)+len(r.skips) > 0 || (len(r.errors) > 0) != tc.wantError {
				t.Fatalf("errors %q, fatals %q, skips %q", r.errors, r.fatals, r.skips)
			}
			if rep == nil || rep.Verdict != tc.want {
				t.Fatalf("verdict: got %+v, want %s", rep, tc.want)
			}
			worst := 0.0
			for _, f := range rep.Families {
				worst = max(worst, f.MaxRatio)
			}
			t.Logf("worst ratio %.2f, verdict %s", worst, rep.Verdict)
			if got := worst; got < tc.min || got > tc.max {
				t.Errorf("worst ratio %.3f, want %.2f..%.2f", got, tc.min, tc.max)
			}
		})
	}
	if ks, err := rd.Client.Keys(context.Background(), "*").Result(); err != nil || len(ks) != 0 {
		t.Errorf("keys left on Redis: %v, %v", ks, err)
	}
}
