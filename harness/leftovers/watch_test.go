package leftovers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// The watch fires nothing while the run's Redis stays as it was, and the
// *server.EnvError (Vanished) within a few looks once the run's keys are
// removed; a change the last look missed is fired by stop.
func TestWatch(t *testing.T) {
	r := redistest.Open(t)
	ctx := context.Background()
	cfg := leftovers.WatchConfig{Every: 20 * time.Millisecond, Last: time.Second}
	watch := func(id string) (*leftovers.Registration, func(), chan error) {
		t.Helper()
		reg, err := leftovers.Register(ctx, r.Client, id, short)
		if err != nil {
			t.Fatal(err)
		}
		env, err := leftovers.NewEnvCheck(ctx, r.Client, reg)
		if err != nil {
			t.Fatal(err)
		}
		fired := make(chan error, 2)
		return reg, env.Watch(ctx, cfg, func(err error) { fired <- err }), fired
	}
	vanished := func(err error) bool {
		var ee *server.EnvError
		return errors.As(err, &ee) && ee.Vanished
	}

	id := server.NewRunID()
	reg, stop, fired := watch(id)
	time.Sleep(5 * cfg.Every)
	select {
	case err := <-fired:
		t.Fatalf("fired with nothing changed: %v", err)
	default:
	}
	r.Client.Del(ctx, leftovers.MarkerKey(id), leftovers.RecordKey(id))
	select {
	case err := <-fired:
		if !vanished(err) {
			t.Errorf("fired %v, want a vanished EnvError", err)
		}
	case <-time.After(time.Second):
		t.Error("no EnvError 1 s after the run's keys were removed")
	}
	stop()
	reg.Stop()

	// removed right before the command ends: stop's last look finds it
	id = server.NewRunID()
	reg, stop, fired = watch(id)
	defer reg.Stop()
	r.Client.Del(ctx, leftovers.MarkerKey(id), leftovers.RecordKey(id))
	stop()
	stop()
	select {
	case err := <-fired:
		if !vanished(err) {
			t.Errorf("fired %v, want a vanished EnvError", err)
		}
	default:
		t.Error("stop's last look missed the removal")
	}
}
