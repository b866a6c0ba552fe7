package harness_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// TestLoadMillion sends 10^6 decisions through sliding-log from 64
// concurrent clients and checks decisions.jsonl: every decision recorded
// once, none lost. It reports the peak RSS. Run by `make load`
// (RATELAB_LOAD=1); RATELAB_LOAD_N changes the count.
func TestLoadMillion(t *testing.T) {
	if os.Getenv("RATELAB_LOAD") == "" {
		t.Skip("set RATELAB_LOAD=1 (make load) to send 10^6 decisions")
	}
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("RATELAB_LOAD_N")); err == nil && v > 0 {
		n = v
	}
	const clients, keys = 64, 1000
	lim := limit.Limit{Count: 100, Window: time.Second}
	arr := make([]scenarios.Arrival, n)
	for i := range arr {
		arr[i] = scenarios.Arrival{At: 0, Key: "k" + strconv.Itoa(i%keys), Cost: 1, Client: i % clients}
	}
	sched := scenarios.Schedule{Scenario: "load", Params: scenarios.Params{Limit: lim.Count, Window: lim.Window}, Arrivals: arr}
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	log := measure.NewDecisionLog(f)
	l, _ := algorithms.NewSlidingLog(srv.Client(), lim)
	r := &harness.Runner{Redis: srv.Client(), Clock: harness.ClientClock, Log: log, Unaligned: true,
		Timeout: 2 * time.Second}
	start := time.Now()
	res, err := r.Execute(ctx, []harness.Job{harness.Job{Limiter: l, Limit: lim, Prefix: srv.Key(t) + ":"}.WithSchedule(sched)})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)

	rf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	seen := make([]bool, n)
	count, errs := 0, 0
	sc := bufio.NewScanner(rf)
	for sc.Scan() {
		var d measure.Record
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %d: %v", count+1, err)
		}
		if d.Seq < 0 || d.Seq >= n || seen[d.Seq] {
			t.Fatalf("record %d: seq %d duplicated or out of range", count+1, d.Seq)
		}
		seen[d.Seq] = true
		count++
		if d.Error != "" {
			errs++
		}
	}
	if count != n {
		t.Fatalf("%d records, want %d: %d lost", count, n, n-count)
	}
	h := res[0].Latency
	msg := fmt.Sprintf("%d decisions from %d clients in %s (%.0f/s), %d errors, p50 %dµs p99 %dµs, peak RSS %.1f MiB",
		n, clients, took.Round(time.Millisecond), float64(n)/took.Seconds(), errs,
		h.ValueAtQuantile(50), h.ValueAtQuantile(99), float64(ru.Maxrss)/1024)
	t.Log(msg)
	fmt.Println("load:", msg)
}
