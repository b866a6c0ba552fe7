package harness_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var ctx = context.Background()

// Many clients at one instant in real time: the sliding log holds the limit.
func TestRunnerConcurrentClients(t *testing.T) {
	lim := limit.Limit{Count: 50, Window: 5 * time.Second}
	var arr []scenarios.Arrival
	for c := 0; c < 16; c++ {
		for i := 0; i < 10; i++ {
			arr = append(arr, scenarios.Arrival{At: 0, Key: "hot", Cost: 1, Client: c})
		}
	}
	sched := scenarios.Schedule{Scenario: "test", Params: scenarios.Params{Limit: 50, Window: lim.Window}, Arrivals: arr}
	for _, clock := range []harness.ClockMode{harness.RedisClock, harness.ClientClock} {
		l, _ := algorithms.NewSlidingLog(srv.Client(), lim)
		r := &harness.Runner{Redis: srv.Client(), Clock: clock, Lead: 50 * time.Millisecond}
		rows, err := r.Run(ctx, []harness.Job{harness.Job{Limiter: l, Limit: lim, Prefix: srv.Key(t) + ":"}.WithSchedule(sched)})
		if err != nil {
			t.Fatal(err)
		}
		if got := rows[0]; got.Accepted != 50 || got.MaxInWindow != 50 || got.Requests != 160 {
			t.Errorf("%s clock: accepted %d max %d requests %d, want 50 50 160", clock, got.Accepted, got.MaxInWindow, got.Requests)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	start := time.Now()
	_, err := server.OpenURL(ctx, "redis://127.0.0.1:1/0", server.Options{Timeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable URL: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("unreachable URL took %v, want within the connect timeout", d)
	}
	if _, err := server.OpenURL(ctx, "mysql://x", server.Options{Timeout: time.Second}); err == nil {
		t.Error("unknown scheme: no error")
	}
	// a URL to a live server works, and Close leaves it running
	r, err := server.OpenURL(ctx, "redis://"+srv.Info.Addr+"/0", server.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Owned() || r.Info.Mode != "url" {
		t.Errorf("URL Redis: owned %v mode %s", r.Owned(), r.Info.Mode)
	}
	r.Close()
	if err := srv.Client().Ping(ctx).Err(); err != nil {
		t.Errorf("closing a URL Redis stopped the server: %v", err)
	}
}

// execute runs jobs on r (Execute) and returns, beside the results, each
// job's outcomes in the order its Sink was told them (a Collector each,
// in place of the jobs' own sinks).
func execute(r *harness.Runner, jobs ...harness.Job) ([]harness.JobResult, [][]harness.Outcome, error) {
	kept := make([]harness.Collector, len(jobs))
	for i := range jobs {
		jobs[i].Sink = &kept[i]
	}
	jrs, err := r.Execute(ctx, jobs)
	outs := make([][]harness.Outcome, len(jobs))
	for i := range kept {
		outs[i] = kept[i].Outcomes
	}
	return jrs, outs, err
}
