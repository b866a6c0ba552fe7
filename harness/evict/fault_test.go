package evict_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/evict"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// failInfo fails every INFO sent while on is set (a network error: the
// reading is lost, as in a brief outage), and counts those it failed.
type failInfo struct {
	on     *atomic.Bool
	failed *atomic.Int64
}

func (h failInfo) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h failInfo) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() && cmd.Name() == "info" {
			h.failed.Add(1)
			cmd.SetErr(errors.New("i/o timeout"))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (h failInfo) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The watch skips the readings it cannot get (the command's own calls
// report an outage) and stops nothing for them; once readings come back,
// it stops the command on an eviction it missed meanwhile.
func TestWatchSkipsFailedReadings(t *testing.T) {
	r := redistest.Open(t)
	pressure(t, r, "allkeys-lru", 2000, 16<<20)
	ctx := context.Background()
	opt := *r.Client.(*redis.Client).Options()
	c := redis.NewClient(&opt)
	defer c.Close()
	var on atomic.Bool
	var failed atomic.Int64
	c.AddHook(failInfo{on: &on, failed: &failed})
	ms, err := evict.Check(ctx, c, r.Info.Addr, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	on.Store(true)
	fired := make(chan *evict.Error, 1)
	stop := evict.Watch(ctx, c, r.Info.Addr, ms, evict.Config{Every: 2 * time.Millisecond}, func(e *evict.Error) { fired <- e })
	defer stop()
	// past maxmemory while no reading comes through: the server evicts
	value := strings.Repeat("x", 1<<20)
	p := r.Client.Pipeline()
	for k := range 24 {
		p.Set(ctx, server.KeyPrefix+"burst:"+strconv.Itoa(k), value, time.Minute)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); failed.Load() < 5; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watch read %d times in 5 s at a 2 ms period", failed.Load())
		}
	}
	select {
	case e := <-fired:
		t.Fatalf("fired without a reading: %v", e)
	default:
	}
	on.Store(false)
	select {
	case e := <-fired:
		if !e.Stopped || e.Evicted == 0 {
			t.Errorf("got %+v, want the evictions named", e)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the watch never fired once readings came back")
	}
}
