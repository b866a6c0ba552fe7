package capacity_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/capacity"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var ctx = context.Background()

func TestFillPlan(t *testing.T) {
	hour := time.Hour
	cases := []struct {
		name      string
		alg       string
		limit     limit.Limit
		calls     int
		units     int64
		lastStart time.Duration // offset of the last call
	}{
		// one member per unit, spread over the window
		{"sliding-log 10", "sliding-log", limit.Limit{Count: 10, Window: hour}, 10, 10, 54 * time.Minute},
		{"sliding-log 129", "sliding-log", limit.Limit{Count: 129, Window: hour}, 129, 129, 128 * (hour / 129)},
		// one call per block carrying the block's share
		{"bucketed-hash default precision", "bucketed-hash", limit.Limit{Count: 100, Window: hour}, 10, 100, 54 * time.Minute},
		{"bucketed-hash fewer units than blocks", "bucketed-hash", limit.Limit{Count: 5, Window: hour}, 5, 5, 54 * time.Minute},
		{"bucketed-hash 1m precision", "bucketed-hash", limit.Limit{Count: 1000, Window: hour, Precision: time.Minute}, 60, 1000, 59 * time.Minute},
		// the bucket ends at the limit with one call
		{"reservoir", "reservoir", limit.Limit{Count: 10000, Window: hour}, 1, 10000, 0},
		// a microsecond in: the theoretical arrival time has a fraction
		{"gcra", "gcra", limit.Limit{Count: 10000, Window: hour}, 1, 10000, time.Microsecond},
		// the window counters: the previous window's counter beside the current one
		{"fixed-window", "fixed-window", limit.Limit{Count: 10000, Window: hour}, 2, 20000, hour},
		{"sliding-counter", "sliding-counter", limit.Limit{Count: 10000, Window: hour}, 2, 15000, hour + hour/2},
		{"sliding-counter odd", "sliding-counter", limit.Limit{Count: 5, Window: hour}, 2, 7, hour + hour/2},
		// at a limit of 1 the previous window's unit closes the next window
		{"sliding-counter 1", "sliding-counter", limit.Limit{Count: 1, Window: hour}, 1, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := capacity.FillPlan(c.alg, c.limit)
			var units int64
			for i, call := range plan {
				units += call.Cost
				if call.Cost < 1 || call.Cost > c.limit.Count {
					t.Errorf("call %d: cost %d outside 1..%d", i, call.Cost, c.limit.Count)
				}
				if i > 0 && call.Offset <= plan[i-1].Offset {
					t.Errorf("call %d: offset %v not after %v", i, call.Offset, plan[i-1].Offset)
				}
			}
			if n := capacity.PlanCalls(c.alg, c.limit); n != int64(len(plan)) {
				t.Errorf("PlanCalls says %d calls, the plan has %d", n, len(plan))
			}
			if len(plan) != c.calls || units != c.units || plan[len(plan)-1].Offset != c.lastStart {
				t.Errorf("got %d calls, %d units, last at %v; want %d, %d, %v",
					len(plan), units, plan[len(plan)-1].Offset, c.calls, c.units, c.lastStart)
			}
		})
	}
}

func TestKeysFor(t *testing.T) {
	cases := []struct {
		wanted      int
		callsPerKey int64
		budget      int64
		want        int
	}{
		{10000, 1, 100_000, 10000},      // within the budget
		{10000, 10, 100_000, 10000},     // exactly the budget
		{10000, 100, 100_000, 1000},     // scaled down
		{10000, 10000, 100_000, 10},     // scaled down to the minimum
		{10000, 1_000_000, 100_000, 10}, // never below the minimum
		{5, 1_000_000, 100_000, 5},      // never above what was asked for
	}
	for _, c := range cases {
		if got := capacity.KeysFor(c.wanted, c.callsPerKey, c.budget); got != c.want {
			t.Errorf("KeysFor(%d, %d, %d) = %d, want %d", c.wanted, c.callsPerKey, c.budget, got, c.want)
		}
	}
}

// A small capacity run: the sorted set turns into a skiplist at the 129th
// entry, a trimmed one stays a skiplist, big keys agree with used_memory,
// and nothing is left behind.
func TestRun(t *testing.T) {
	foreign := srv.Key(t)
	srv.Client().Set(ctx, foreign, "not ratelab's", 0)
	res, err := capacity.Run(ctx, srv.Redis, capacity.Config{
		Algorithms: []string{"sliding-log", "fixed-window"},
		Limits:     capacity.Limits([]int64{10, 128, 129}, capacity.DefaultWindow, 0),
		Keys:       300,
		Budget:     20_000,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Command != "capacity" || len(res.Results) != 6 {
		t.Fatalf("complete %v command %q rows %d", res.Complete, res.Command, len(res.Results))
	}
	want := []struct {
		alg      string
		limit    int64
		keys     int
		encoding string
		entries  int64
	}{
		{"sliding-log", 10, 300, "listpack", 10},
		{"sliding-log", 128, 156, "listpack", 128}, // 20000 / 128 calls per key
		{"sliding-log", 129, 155, "skiplist", 129},
		{"fixed-window", 10, 300, "int", 2}, // the previous window's counter and the current one
		{"fixed-window", 128, 300, "int", 2},
		{"fixed-window", 129, 300, "int", 2},
	}
	for i, w := range want {
		r := res.Results[i]
		if r.Algorithm != w.alg || r.Limit != w.limit || r.Keys != w.keys || r.Encoding != w.encoding || r.Entries != w.entries {
			t.Errorf("row %d: got %s limit %d keys %d %s %d entries; want %s %d %d %s %d",
				i, r.Algorithm, r.Limit, r.Keys, r.Encoding, r.Entries, w.alg, w.limit, w.keys, w.encoding, w.entries)
		}
		if r.MemoryBytes <= 0 || r.UsedMemoryDeltaBytes <= 0 || r.TTLOverheadBytes <= 0 || r.ProjectedBytes <= 0 {
			t.Errorf("row %d: memory %d delta %.0f overhead %.0f projected %d", i, r.MemoryBytes, r.UsedMemoryDeltaBytes, r.TTLOverheadBytes, r.ProjectedBytes)
		}
		if r.Algorithm == "sliding-log" && (r.Agreement < 0.85 || r.Agreement > 1.15) {
			t.Errorf("row %d: MU+TTL %.0f against used_memory delta %.0f: agreement %.2f", i, r.MemoryWithTTLBytes, r.UsedMemoryDeltaBytes, r.Agreement)
		}
	}
	if lp, sl := res.Results[1].MemoryBytes, res.Results[2].MemoryBytes; sl < 2*lp {
		t.Errorf("skiplist at 129 (%d B) not much larger than listpack at 128 (%d B)", sl, lp)
	}
	tr := res.Trim
	if tr == nil || tr.Encoding != "skiplist" || tr.Entries != 51 || tr.FreshEncoding != "listpack" || tr.MemoryBytes <= tr.FreshMemoryBytes {
		t.Errorf("trim: %+v; want a 51-entry skiplist larger than a fresh 51-entry listpack", tr)
	}
	if res.Server.ZsetMaxListpackEntries != 128 {
		t.Errorf("zset-max-listpack-entries %d", res.Server.ZsetMaxListpackEntries)
	}
	if keys, _ := server.ScanKeys(ctx, srv.Client(), res.Config.Prefix); len(keys) != 0 {
		t.Errorf("keys left behind: %d", len(keys))
	}
	if v := srv.Client().Get(ctx, foreign).Val(); v != "not ratelab's" {
		t.Errorf("foreign key changed: %q", v)
	}
}

// SCRIPT FLUSH during a capacity run costs nothing. The
// fills' pipelined EVALSHA meet NOSCRIPT; the scripts are loaded again and
// the failed calls retried, so the run completes with every key filled (a
// warning says the script cache moved used_memory). Without the reload,
// "NOSCRIPT No matching script" fails about one run in three, and every
// run with flushes this frequent.
func TestRunScriptFlush(t *testing.T) {
	fctx, stop := context.WithCancel(ctx)
	flushes := make(chan int)
	go func() {
		n := 0
		for fctx.Err() == nil {
			if srv.Client().ScriptFlush(ctx).Err() == nil {
				n++
			}
			time.Sleep(2 * time.Millisecond)
		}
		flushes <- n
	}()
	res, err := capacity.Run(ctx, srv.Redis, capacity.Config{
		Algorithms: []string{"sliding-log", "bucketed-hash", "fixed-window", "gcra"},
		Limits:     capacity.Limits([]int64{10, 129}, capacity.DefaultWindow, 0),
		Keys:       300,
		Budget:     20_000,
	}, nil)
	stop()
	n := <-flushes
	if err != nil {
		t.Fatalf("after %d SCRIPT FLUSH: %v", n, err)
	}
	if !res.Complete || len(res.Results) != 8 || res.Trim == nil {
		t.Fatalf("complete %v rows %d trim %v", res.Complete, len(res.Results), res.Trim)
	}
	for _, r := range res.Results {
		want := r.Limit // sliding-log: one member per unit
		switch r.Algorithm {
		case "gcra":
			want = 1
		case "fixed-window":
			want = 2 // two windows' counters
		case "bucketed-hash":
			want = -1
		}
		if want > 0 && r.Entries != want {
			t.Errorf("%s at %d: %d entries, want %d", r.Algorithm, r.Limit, r.Entries, want)
		}
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "NOSCRIPT") }) {
		t.Errorf("no warning of the flush in %q", res.Warnings)
	}
	t.Logf("%d SCRIPT FLUSH during the run", n)
}
