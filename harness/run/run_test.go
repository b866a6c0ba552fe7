package run_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
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

func rowsByAlgorithm(res *measure.Results) map[string]measure.Row {
	out := map[string]measure.Row{}
	for _, r := range res.Results {
		out[r.Algorithm] = r
	}
	return out
}

// The seed 001 harness in virtual time: fixed accepts 100, sliding 50.
func TestRunBoundaryBurstVirtual(t *testing.T) {
	var log bytes.Buffer
	foreign := srv.Key(t)
	srv.Client().Set(ctx, foreign, "not ratelab's", 0)
	res, err := run.Run(ctx, srv.Redis, run.Config{Scenarios: []string{"boundary-burst"}}, measure.NewDecisionLog(&log), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ accepted, max int64 }{
		"fixed-window":  {100, 100}, // 50 before the boundary, 50 after: 2x in one window
		"sliding-log":   {50, 50},
		"bucketed-hash": {50, 50}, // precision 1s: the -1s block is still counted at +1s
		"reservoir":     {60, 60}, // 50 from the full bucket, then 2 s of refill at 5/s
	}
	rows := rowsByAlgorithm(res)
	for algo, w := range want {
		r := rows[algo]
		if r.Offered != 100 || r.Accepted != w.accepted || r.MaxInWindow != w.max || r.Ideal != 50 || r.Errors != 0 {
			t.Errorf("%s: offered %d accepted %d max %d ideal %d errors %d; want 100 %d %d 50 0",
				algo, r.Offered, r.Accepted, r.MaxInWindow, r.Ideal, r.Errors, w.accepted, w.max)
		}
		if r.MemoryBytes <= 0 || r.Keys < 1 || r.P50US <= 0 || len(r.Timeline) == 0 {
			t.Errorf("%s: memory %d keys %d p50 %d timeline %d", algo, r.MemoryBytes, r.Keys, r.P50US, len(r.Timeline))
		}
	}
	if r := rows["fixed-window"]; r.Ratio != 2 || r.Fidelity != 2 {
		t.Errorf("fixed-window ratio %v fidelity %v, want 2 2", r.Ratio, r.Fidelity)
	}
	if !res.Complete || res.Redis.Version == "" {
		t.Errorf("complete %v version %q", res.Complete, res.Redis.Version)
	}
	// every decision streamed, one JSON object per line
	n := 0
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var d measure.Record
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		n++
	}
	// every algorithm, gcra included: its script's TIME answers the virtual clock
	// the notes say where latency comes from and what the memory column is;
	// the sample's calls are not logged
	if want := 100 * len(res.Results); n != want || len(res.Results) != len(algorithms.Names()) || len(res.Notes) != 2 ||
		res.Notes[0] != run.LatencyNote || res.Notes[1] != run.MemoryNote(res.Results) {
		t.Errorf("decisions.jsonl has %d records for %d rows (want %d), notes %q", n, len(res.Results), want, res.Notes)
	}
	// nothing left behind; the foreign key untouched
	if keys, _ := server.ScanKeys(ctx, srv.Client(), res.Config.Prefix); len(keys) != 0 {
		t.Errorf("keys left behind: %v", keys)
	}
	if v := srv.Client().Get(ctx, foreign).Val(); v != "not ratelab's" {
		t.Errorf("foreign key changed: %q", v)
	}
}

// The same verdicts in real time, aligned to the Redis server's clock.
func TestRunBoundaryBurstRedisClock(t *testing.T) {
	start := time.Now()
	res, err := run.Run(ctx, srv.Redis, run.Config{
		Algorithms: []string{"fixed-window", "sliding-log"}, Scenarios: []string{"boundary-burst"},
		Clock: harness.RedisClock, Limit: limit.Limit{Count: 20, Window: 2 * time.Second},
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsByAlgorithm(res)
	// 40 (2x) when the first burst is done before the boundary; a loaded
	// machine can push part of it past, so the real-time verdict is "> 20"
	if r := rows["fixed-window"]; r.MaxInWindow <= 20 || r.MaxInWindow > 40 {
		t.Errorf("fixed-window: max %d ratio %v, want 21..40 (over the limit)", r.MaxInWindow, r.Ratio)
	}
	if r := rows["sliding-log"]; r.MaxInWindow != 20 || r.Accepted != 20 {
		t.Errorf("sliding-log: max %d accepted %d, want 20 20", r.MaxInWindow, r.Accepted)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// A cancelled run still removes its keys and says it is incomplete.
func TestRunCancelledCleansUp(t *testing.T) {
	cctx, cancel := context.WithCancel(ctx)
	r := run.Config{Scenarios: []string{"cron-regions"}, RunID: "cancel-" + time.Now().Format("150405.000")}
	go func() { time.Sleep(150 * time.Millisecond); cancel() }()
	res, err := run.Run(cctx, srv.Redis, r, nil, nil)
	if err == nil || res.Complete || res.Error == "" {
		t.Fatalf("cancelled run: err %v complete %v error %q", err, res.Complete, res.Error)
	}
	if keys, _ := server.ScanKeys(ctx, srv.Client(), res.Config.Prefix); len(keys) != 0 {
		t.Errorf("keys left behind: %d", len(keys))
	}
}

// A virtual-time run sends its calls pipelined and several algorithms at
// once: every row's figures but latency are those of the same jobs sent one
// call at a time (harness.Runner without Pipeline), on cron-regions, whose
// eight regional clients arrive at the same instants; latency comes from
// the run's own sample, whose keys are not counted in the rows' keys.
// (Memory is left out: MEMORY USAGE counts the key names, whose prefixes
// differ in length.)
func TestRunPipelinedSameRowsAsOneAtATime(t *testing.T) {
	cfg := run.Config{Scenarios: []string{"cron-regions"}}
	res, err := run.Run(ctx, srv.Redis, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Get("cron-regions")
	if err != nil {
		t.Fatal(err)
	}
	lim, p := cfg.LimitFor(sc)
	sched, err := sc.Make(p)
	if err != nil {
		t.Fatal(err)
	}
	prefix := srv.Key(t) + ":"
	var jobs []harness.Job
	for _, name := range algorithms.Names() {
		l, err := algorithms.New(name, srv.Client(), lim)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, harness.Job{Limiter: l, Limit: lim, Prefix: prefix + name + ":"}.WithSchedule(sched))
	}
	one := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock}
	want, err := one.Run(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Results), len(want))
	}
	for i, got := range res.Results {
		w := want[i]
		if got.P50US <= 0 || got.MaxUS <= 0 {
			t.Errorf("%s: no latency sample (p50 %d, max %d)", got.Algorithm, got.P50US, got.MaxUS)
		}
		type figures struct{ offered, accepted, max, ideal, keys, errs int64 }
		g := figures{got.Offered, got.Accepted, got.MaxInWindow, got.Ideal, got.Keys, got.Errors}
		o := figures{w.Offered, w.Accepted, w.MaxInWindow, w.Ideal, w.Keys, w.Errors}
		if got.Algorithm != w.Algorithm || g != o {
			t.Errorf("%s: pipelined %+v, one at a time (%s) %+v", got.Algorithm, g, w.Algorithm, o)
		}
	}
}

// Ended is told of each scenario once it ran, in order, with its rows in
// the results and the next scenario's not yet: what plots.Early draws from
// while the run goes on.
func TestRunEnded(t *testing.T) {
	var told []string
	cfg := run.Config{Scenarios: []string{"boundary-burst", "steady"}, Algorithms: []string{"fixed-window", "sliding-log"},
		Ended: func(res *measure.Results, scenario string) {
			told = append(told, scenario)
			if n := len(res.Results); n != 2*len(told) || res.Results[n-1].Scenario != scenario {
				t.Errorf("told of %s with %d rows (last %s), want %d, the last of %s", scenario, n, res.Results[n-1].Scenario, 2*len(told), scenario)
			}
		}}
	res, err := run.Run(ctx, srv.Redis, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(told) != 2 || told[0] != "boundary-burst" || told[1] != "steady" || len(res.Results) != 4 {
		t.Errorf("told of %v, %d rows; want boundary-burst then steady, 4 rows", told, len(res.Results))
	}
}
