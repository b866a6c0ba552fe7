package harness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/redis/go-redis/v9"
)

// a script that loops forever is stopped with SCRIPT KILL
// when its call times out, and the error says so; the user's Redis answers
// again afterwards instead of BUSY. The server's busy-reply-threshold is
// 500 ms (the Runner reads it), so the kill comes within a second.
func TestLoopingScriptIsKilled(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start().Redis // its own server: the looping script blocks it
	defer rd.Close()
	if err := rd.Client.ConfigSet(ctx, "busy-reply-threshold", "500").Err(); err != nil {
		t.Fatal(err)
	}
	l := limit.Limit{Count: 5, Window: time.Second}
	lim, err := custom.NewScriptLimiter(rd.Client, "loop.lua", "while true do end", nil, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	r := &harness.Runner{Redis: rd.Client, Clock: harness.VirtualClock, Timeout: 300 * time.Millisecond, Progress: &progress}
	sched := scenarios.Schedule{Scenario: "one", Params: scenarios.Params{Limit: 5, Window: time.Second},
		Arrivals: []scenarios.Arrival{{At: 0, Key: "k", Cost: 1}}}
	start := time.Now()
	res, outs, _ := execute(r, harness.Job{Limiter: lim, Limit: l, Prefix: "ratelab:test-busy:"}.WithSchedule(sched))
	answered := time.Since(start)
	if len(res) != 1 || len(outs[0]) != 1 || !server.IsTimeout(outs[0][0].Err) {
		t.Fatalf("outcomes: %+v, want one that timed out", res)
	}
	err = r.Settle()
	t.Logf("call answered after %v, settled after %v; progress: %s", answered.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), progress.String())
	if !errors.Is(err, busy.ErrScriptKilled) {
		t.Errorf("Settle: %v, want an error wrapping ErrScriptKilled", err)
	}
	if !strings.Contains(progress.String(), "SCRIPT KILL") {
		t.Errorf("progress does not say SCRIPT KILL was sent: %q", progress.String())
	}
	// the killed script stops at its next hook: Redis answers again at once
	deadline := time.Now().Add(time.Second)
	for {
		err := rd.Client.Ping(ctx).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis still busy 1 s after ratelab settled: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// busyServer starts a server of the test's own whose busy-reply-threshold
// is threshold, and a looping script sent by another client on it (with
// keys, when given); the returned channel gets that client's EVAL error.
func busyServer(t *testing.T, threshold time.Duration, script string, keys ...string) (*server.Redis, <-chan error) {
	t.Helper()
	ctx := context.Background()
	rd := redistest.Start().Redis
	t.Cleanup(func() { _ = rd.Close() })
	if err := rd.Client.ConfigSet(ctx, "busy-reply-threshold", fmt.Sprint(threshold.Milliseconds())).Err(); err != nil {
		t.Fatal(err)
	}
	opt := *rd.Client.(*redis.Client).Options()
	opt.ReadTimeout, opt.MaxRetries = -1, -1 // it waits for its script, however long
	other := redis.NewClient(&opt)
	t.Cleanup(func() { _ = other.Close() })
	done := make(chan error, 1)
	go func() { done <- other.Eval(ctx, script, keys).Err() }()
	time.Sleep(100 * time.Millisecond) // the script is running
	return rd, done
}

// another client's script that keeps Redis busy is never
// killed by ratelab, which runs only built-ins: its call times out, it
// says Redis is busy with another client's script, and that script is
// still running afterwards (the test kills it).
func TestOtherClientsScriptIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	rd, other := busyServer(t, time.Second, "while true do end")
	l := limit.Limit{Count: 5, Window: time.Second}
	lim, err := algorithms.New("fixed-window", rd.Client, l)
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	r := &harness.Runner{Redis: rd.Client, Clock: harness.VirtualClock, Timeout: 300 * time.Millisecond, Progress: &progress}
	sched := scenarios.Schedule{Scenario: "one", Params: scenarios.Params{Limit: 5, Window: time.Second},
		Arrivals: []scenarios.Arrival{{At: 0, Key: "k", Cost: 1}}}
	start := time.Now()
	res, outs, _ := execute(r, harness.Job{Limiter: lim, Limit: l, Prefix: "ratelab:test-foreign:"}.WithSchedule(sched))
	if len(res) != 1 || len(outs[0]) != 1 || outs[0][0].Err == nil {
		t.Fatalf("outcomes: %+v, want one that failed", res)
	}
	err = r.Settle()
	t.Logf("call: %v", outs[0][0].Err)
	t.Logf("settled after %v: %v; progress: %s", time.Since(start).Round(time.Millisecond), err, progress.String())
	if !errors.Is(err, busy.ErrForeignBusy) || !strings.Contains(err.Error(), "BUSY") || !strings.Contains(err.Error(), "another client") {
		t.Errorf("Settle: %v, want an error wrapping ErrForeignBusy", err)
	}
	if strings.Contains(progress.String(), "sent SCRIPT KILL") {
		t.Errorf("progress says ratelab sent SCRIPT KILL: %q", progress.String())
	}
	select {
	case err := <-other:
		t.Fatalf("the other client's script ended: %v", err)
	default:
	}
	if err := rd.Client.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
		t.Errorf("PING after ratelab: %v, want BUSY (the other script still runs)", err)
	}
	if err := rd.Client.ScriptKill(ctx).Err(); err != nil {
		t.Fatalf("the test's SCRIPT KILL: %v", err)
	}
	if err := <-other; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the other client's EVAL: %v, want killed by the test", err)
	}
}

// ratelab's own script that wrote and then loops cannot be
// killed: the error says so and names SHUTDOWN NOSAVE.
func TestUnkillableScriptIsNamed(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start().Redis
	defer rd.Close()
	if err := rd.Client.ConfigSet(ctx, "busy-reply-threshold", "1000").Err(); err != nil {
		t.Fatal(err)
	}
	l := limit.Limit{Count: 5, Window: time.Second}
	lim, err := custom.NewScriptLimiter(rd.Client, "wrote.lua", "redis.call('SET', KEYS[1], 1) while true do end", nil, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	r := &harness.Runner{Redis: rd.Client, Clock: harness.VirtualClock, Timeout: 300 * time.Millisecond, Progress: &progress}
	sched := scenarios.Schedule{Scenario: "one", Params: scenarios.Params{Limit: 5, Window: time.Second},
		Arrivals: []scenarios.Arrival{{At: 0, Key: "k", Cost: 1}}}
	_, _ = r.Execute(ctx, []harness.Job{harness.Job{Limiter: lim, Limit: l, Prefix: "ratelab:test-unkillable:"}.WithSchedule(sched)})
	err = r.Settle()
	t.Logf("Settle: %v; progress: %s", err, progress.String())
	if !errors.Is(err, busy.ErrScriptUnkillable) || !strings.Contains(err.Error(), "SHUTDOWN NOSAVE") || !strings.Contains(err.Error(), "wrote") {
		t.Errorf("Settle: %v, want an error wrapping ErrScriptUnkillable", err)
	}
	// only SHUTDOWN NOSAVE stops it (the connection drops as it does)
	_ = rd.Client.Do(ctx, "SHUTDOWN", "NOSAVE").Err()
}
