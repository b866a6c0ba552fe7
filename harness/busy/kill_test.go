package busy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// after a call of ratelab's timed out, Kill
// kills only a script that call started: a script another client was
// already running when the call was sent is left alone (Foreign), ratelab's
// own is killed, and NotBusy when nothing runs.
func TestKillOnlyOwn(t *testing.T) {
	ctx := context.Background()
	const threshold = time.Second
	cases := []struct {
		name    string
		foreign bool // another client starts the loop before ratelab's call
		fn      bool // the loop is a function's (FCALL): FUNCTION KILL stops it
		want    busy.Found
	}{
		{"another client's script", true, false, busy.Foreign},
		{"ratelab's own script", false, false, busy.Killed},
		{"ratelab's own function", false, true, busy.Killed},
	}
	for _, tc := range cases {
		rd := redistest.Open(t)
		c := rd.Client.(*redis.Client)
		if err := c.ConfigSet(ctx, "busy-reply-threshold", "1000").Err(); err != nil {
			t.Fatal(err)
		}
		opt := *c.Options()
		opt.ReadTimeout, opt.MaxRetries = -1, -1
		other := redis.NewClient(&opt)
		done := make(chan error, 1)
		if tc.foreign {
			go func() { done <- other.Eval(ctx, "while true do end", nil).Err() }()
			time.Sleep(100 * time.Millisecond)
		}
		// ratelab's call: the loop itself, or a GET stuck behind the other's
		sent := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		var err error
		switch {
		case tc.fn:
			if err := c.FunctionLoad(ctx, "#!lua name=loop\nredis.register_function('loop', function() while true do end end)").Err(); err != nil {
				t.Fatal(err)
			}
			err = c.FCall(cctx, "loop", nil).Err()
		case tc.foreign:
			err = c.Get(cctx, "ratelab:x").Err()
		default:
			err = c.Eval(cctx, "while true do end", nil).Err()
		}
		cancel()
		if !server.IsTimeout(err) {
			t.Fatalf("%s: ratelab's call: %v, want a timeout", tc.name, err)
		}
		got, err := busy.Kill(ctx, c, sent, busy.Config{Threshold: threshold})
		t.Logf("%s: %v after %v", tc.name, got, time.Since(sent).Round(time.Millisecond))
		if got != tc.want || err != nil {
			t.Errorf("%s: Kill = %v, %v; want %v", tc.name, got, err, tc.want)
		}
		if tc.foreign {
			if err := c.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
				t.Errorf("%s: PING afterwards: %v, want BUSY (the script still runs)", tc.name, err)
			}
			_ = c.ScriptKill(ctx).Err() // the test's
			<-done
		}
		if got, err := busy.Kill(ctx, c, time.Now(), busy.Config{Threshold: threshold}); got != busy.NotBusy || err != nil {
			t.Errorf("%s: on an idle server: %v, %v; want NotBusy", tc.name, got, err)
		}
		_ = other.Close()
	}
}
