package guard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// a script is tried on a throwaway server first; one that
// writes and then loops is refused (naming "script"), one that only loops
// is found Killed, and a well-behaved one passes.
func TestProbeScript(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, script string
		want         busy.Found
		refused      bool
	}{
		{"a limiter", "return redis.call('INCR', KEYS[1])", busy.NotBusy, false},
		{"loops without writing", "while true do end", busy.Killed, false},
		{"writes then loops", "redis.call('SET', KEYS[1], 1) while true do end", busy.Unkillable, true},
		{"loops on its third call", "if redis.call('INCR', KEYS[1]) > 2 then while true do end end return 1", busy.Unkillable, true},
	}
	for _, tc := range cases {
		probe := redistest.Open(t)
		start := time.Now()
		found, err := guard.ProbeScript(ctx, probe, 4, 200*time.Millisecond, func(ctx context.Context, c redis.UniversalClient) error {
			return c.Eval(ctx, tc.script, []string{"ratelab:probe:{k}"}).Err()
		})
		name, _ := field.Name(err)
		t.Logf("%s: %v, %v after %v", tc.name, found, err, time.Since(start).Round(time.Millisecond))
		if found != tc.want || (err != nil) != tc.refused || (tc.refused && (name != "script" || !errors.Is(err, busy.ErrScriptUnkillable))) {
			t.Errorf("%s: %v, %v; want %v, refused %v", tc.name, found, err, tc.want, tc.refused)
		}
		if tc.refused {
			_ = probe.Client.Do(ctx, "SHUTDOWN", "NOSAVE").Err()
		}
	}
	users := &server.Redis{Client: redistest.Open(t).Client}
	users.Info.Mode = "url"
	if _, err := guard.ProbeScript(ctx, users, 1, time.Second, func(context.Context, redis.UniversalClient) error { return nil }); err == nil {
		t.Error("a user's Redis was used as the probe")
	}
}
