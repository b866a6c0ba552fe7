package busy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// A Killer that never started reports nothing, or another client's script
// when calls were answered BUSY; one started by a timed-out call of a
// script that loops reads the server's threshold, kills the script once
// (a second Start does nothing), says so on progress, and Settle names it.
func TestKiller(t *testing.T) {
	var idle busy.Killer
	if err := idle.Settle(time.Second, false); err != nil {
		t.Errorf("no timeout, no BUSY: %v", err)
	}
	if err := idle.Settle(time.Second, true); !errors.Is(err, busy.ErrForeignBusy) {
		t.Errorf("answered BUSY: %v, want ErrForeignBusy", err)
	}

	ctx := context.Background()
	rd := redistest.Open(t)
	c := rd.Client.(*redis.Client)
	if err := c.ConfigSet(ctx, "busy-reply-threshold", "200").Err(); err != nil {
		t.Fatal(err)
	}
	var k busy.Killer
	k.ReadThreshold(ctx, c)
	if k.Config.Threshold != 200*time.Millisecond {
		t.Fatalf("threshold %v, want 200ms", k.Config.Threshold)
	}
	const timeout = 100 * time.Millisecond
	sent := time.Now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	err := c.Eval(cctx, "while true do end", nil).Err()
	cancel()
	if !server.IsTimeout(err) {
		t.Fatalf("the looping call: %v, want a timeout", err)
	}
	var progress strings.Builder
	k.Start(ctx, c, sent, timeout, &progress)
	k.Start(ctx, c, sent, timeout, nil)
	err = k.Settle(timeout, false)
	if !errors.Is(err, busy.ErrScriptKilled) {
		t.Errorf("Settle: %v, want ErrScriptKilled", err)
	}
	if !strings.Contains(progress.String(), "SCRIPT KILL") {
		t.Errorf("progress: %q, want SCRIPT KILL named", progress.String())
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after the kill: %v", err)
	}
}
