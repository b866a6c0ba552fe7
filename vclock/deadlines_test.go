package vclock_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/vclock"
)

// TestDeadlines: a round trip through Deadlines (Due, Translate, the Wire
// sent to Redis, Settle) gives the replies Redis would give on a server
// whose clock read the virtual time, on fixed instants, and never leaves a
// real TTL on the key.
func TestDeadlines(t *testing.T) {
	k := srv.Key(t)
	rdb := srv.Client()
	var d vclock.Deadlines
	t0 := time.UnixMilli(1_767_225_600_000)
	steps := []struct {
		at   time.Duration // after t0
		cmd  []string
		want any
	}{
		{0, []string{"SET", k, "v"}, "OK"},
		// relative expiry, read back in both units, rounded as Redis does
		{0, []string{"PEXPIRE", k, "60000"}, int64(1)},
		{20 * time.Second, []string{"PTTL", k}, int64(40000)},
		{20*time.Second + 400*time.Millisecond, []string{"TTL", k}, int64(40)},
		{20*time.Second + 600*time.Millisecond, []string{"TTL", k}, int64(39)},
		// conditions compare with the virtual deadline
		{21 * time.Second, []string{"EXPIRE", k, "10", "GT"}, int64(0)},
		{21 * time.Second, []string{"EXPIRE", k, "10", "LT"}, int64(1)},
		{21 * time.Second, []string{"PTTL", k}, int64(10000)},
		// at the deadline less 1 µs the key is there, at it gone
		{31*time.Second - time.Microsecond, []string{"GET", k}, "v"},
		{31 * time.Second, []string{"GET", k}, nil},
		{31 * time.Second, []string{"TTL", k}, int64(-2)},
		// SET with an absolute expiry, then without one: no deadline
		{40 * time.Second, []string{"SET", k, "w", "PXAT", "1767225700000"}, "OK"},
		{40 * time.Second, []string{"PTTL", k}, int64(60000)},
		{41 * time.Second, []string{"SET", k, "x", "KEEPTTL"}, "OK"},
		{41 * time.Second, []string{"PTTL", k}, int64(59000)},
		{42 * time.Second, []string{"PERSIST", k}, int64(1)},
		{42 * time.Second, []string{"PERSIST", k}, int64(0)},
		{42 * time.Second, []string{"TTL", k}, int64(-1)},
		{43 * time.Second, []string{"PSETEX", k, "5", "y"}, "OK"},
		{43*time.Second + 5*time.Millisecond, []string{"EXISTS", k}, int64(0)},
		{44 * time.Second, []string{"TIME"}, []any{"1767225644", "0"}},
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		cmds := [][]string{s.cmd}
		for _, key := range d.Due(now, cmds) {
			if err := rdb.Del(t.Context(), key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		tr := d.Translate(now, s.cmd)
		args := make([]any, len(tr.Wire))
		for j, a := range tr.Wire {
			args[j] = a
		}
		reply, err := rdb.Do(t.Context(), args...).Result()
		if errors.Is(err, redis.Nil) {
			reply, err = nil, nil
		}
		if err != nil {
			t.Fatalf("step %d: %v: %v", i, tr.Wire, err)
		}
		if got := d.Settle(now, tr, reply); !reflect.DeepEqual(got, s.want) {
			t.Errorf("step %d: %v at t0+%s = %#v, want %#v", i, s.cmd, s.at, got, s.want)
		}
		if real := rdb.PTTL(t.Context(), k).Val(); real >= 0 {
			t.Fatalf("step %d: Redis holds a real TTL %s: TTLs must stay virtual", i, real)
		}
	}
}
