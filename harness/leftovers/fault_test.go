package leftovers_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// oomError is Redis's answer to a write when it is out of memory under
// noeviction: an error reply (IsRedisError), not a failure to reach it.
type oomError string

func (e oomError) Error() string { return string(e) }
func (oomError) RedisError()     {}

// refuseMarker answers every write of a run's marker (PEXPIRE, SET) with
// OOM while on is set: the marker cannot be kept (a Redis out of memory
// refuses the SET; the PEXPIRE stands for a refresh that does not get
// through). Everything else reaches the server.
type refuseMarker struct{ on *atomic.Bool }

func (h refuseMarker) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h refuseMarker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if h.on.Load() && len(args) > 1 && (cmd.Name() == "pexpire" || cmd.Name() == "set") {
			if k, _ := args[1].(string); strings.HasSuffix(k, ":"+server.MarkerSuffix) {
				cmd.SetErr(oomError("OOM command not allowed when used memory > 'maxmemory'."))
				return cmd.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (h refuseMarker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Redis that refuses the heartbeat's writes lets the run's marker expire: the run's keys are still there (its record too), so
// neither the heartbeat nor the environment's check calls them vanished.
// Removed together, marker and record, they are.
func TestRefusedHeartbeatIsNotVanished(t *testing.T) {
	r := redistest.Open(t)
	ctx := context.Background()
	opt := *r.Client.(*redis.Client).Options()
	c := redis.NewClient(&opt)
	defer c.Close()
	var refuse atomic.Bool
	c.AddHook(refuseMarker{on: &refuse})
	id := server.NewRunID()
	reg, err := leftovers.Register(ctx, c, id, short)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	env, err := leftovers.NewEnvCheck(ctx, c, reg)
	if err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	time.Sleep(short.TTL + 3*short.Every)
	if n := r.Client.Exists(ctx, leftovers.MarkerKey(id)).Val(); n != 0 {
		t.Fatalf("the marker is still there with its refreshes refused")
	}
	if err := env.Check(ctx); err != nil || reg.Vanished() {
		t.Errorf("marker expired for want of memory: Check %v, Vanished %v; want neither", err, reg.Vanished())
	}
	refuse.Store(false)
	time.Sleep(3 * short.Every) // marked again
	if r.Client.Exists(ctx, leftovers.MarkerKey(id)).Val() != 1 {
		t.Fatal("the marker was not written again once Redis took writes")
	}
	r.Client.Del(ctx, leftovers.MarkerKey(id), leftovers.RecordKey(id))
	if err := env.Check(ctx); !server.IsEnvError(err) || !reg.Vanished() {
		t.Errorf("marker and record removed: Check %v, Vanished %v; want an EnvError", err, reg.Vanished())
	}
}
