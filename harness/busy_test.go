package harness_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/redistest"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

// issue 14 item 5: a script that loops forever is stopped with SCRIPT KILL
// when its call times out, and the error says so; the user's Redis answers
// again afterwards instead of BUSY.
func TestLoopingScriptIsKilled(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start().Redis // its own server: the looping script blocks it
	defer rd.Close()
	l := limit.Limit{Count: 5, Window: time.Second}
	lim, err := algorithms.NewScriptLimiter(rd.Client, "loop.lua", "while true do end", nil, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	r := &harness.Runner{Redis: rd.Client, Clock: harness.VirtualClock, Timeout: 300 * time.Millisecond, Progress: &progress}
	sched := scenarios.Schedule{Scenario: "one", Params: scenarios.Params{Limit: 5, Window: time.Second},
		Arrivals: []scenarios.Arrival{{At: 0, Key: "k", Cost: 1}}}
	start := time.Now()
	res, _ := r.Execute(ctx, []harness.Job{{Limiter: lim, Limit: l, Schedule: sched, Prefix: "ratelab:test-busy:"}})
	answered := time.Since(start)
	if len(res) != 1 || len(res[0].Outcomes) != 1 || !server.IsTimeout(res[0].Outcomes[0].Err) {
		t.Fatalf("outcomes: %+v, want one that timed out", res)
	}
	err = r.Settle()
	t.Logf("call answered after %v, settled after %v; progress: %s", answered.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), progress.String())
	if !errors.Is(err, server.ErrScriptKilled) {
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
