package harness_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/measure"
)

// The captured call, replayed by hand, decides exactly as Allow does on a
// twin key: bench and redis-benchmark send what the limiter sends.
func TestCaptureCallReplaysAllow(t *testing.T) {
	l := algorithms.Limit{Limit: 3, Window: time.Minute}
	for _, alg := range algorithms.Names() {
		t.Run(alg, func(t *testing.T) {
			call, err := harness.CaptureCall(alg, l)
			if err != nil {
				t.Fatal(err)
			}
			if alg == "sliding-log" && len(call.Nonce) != 1 {
				t.Errorf("sliding-log: nonce positions %v, want one", call.Nonce)
			}
			lim, err := algorithms.New(alg, srv.Client(), l)
			if err != nil {
				t.Fatal(err)
			}
			base := srv.Key(t)
			viaAllow, viaCall := "{"+base+":a}", "{"+base+":c}"
			for i := range 5 {
				d, err := lim.Allow(ctx, viaAllow, 1, algorithms.ServerTime())
				if err != nil {
					t.Fatal(err)
				}
				args := []any{"evalsha", call.SHA, "1", viaCall}
				for j, a := range call.Args {
					if slices.Contains(call.Nonce, j) {
						a = "n" + string(rune('a'+i))
					}
					args = append(args, a)
				}
				v, err := srv.Client().Do(ctx, args...).Result()
				if err != nil {
					t.Fatal(err)
				}
				// every script answers {allowed, remaining, ...}: ratelab's
				// with 0|1, redis_rate's (gcra) with the units allowed
				arr, _ := v.([]any)
				if len(arr) < 2 {
					t.Fatalf("step %d: reply %v", i, v)
				}
				allowed, _ := arr[0].(int64)
				remaining, _ := arr[1].(int64)
				if (allowed > 0) != d.Allowed || max(remaining, 0) != d.Remaining {
					t.Errorf("step %d: replayed call allowed=%v remaining=%d, Allow allowed=%v remaining=%d",
						i, allowed > 0, remaining, d.Allowed, d.Remaining)
				}
			}
		})
	}
}

func TestRedisBenchmarkCommand(t *testing.T) {
	call := harness.BenchCall{SHA: "abc", Args: []string{"100", "60000000", "1", "", "salt1"}, Nonce: []int{4}}
	cases := []struct {
		path string
		want string
	}{
		{measure.PathAllow, `EVALSHA abc 1 p:{__rand_int__} 100 60000000 1  __rand_int__`},
		{measure.PathDeny, `EVALSHA abc 1 p:{hot} 100 60000000 1  __rand_int__`},
	}
	for _, c := range cases {
		if got := strings.Join(harness.RedisBenchmarkCommand(call, c.path, "p:"), " "); got != c.want {
			t.Errorf("%s: got %q, want %q", c.path, got, c.want)
		}
	}
}

// A small comparison run: both paths do what they say, redis-benchmark
// runs the same call, and nothing is left behind.
func TestRunBench(t *testing.T) {
	rb, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Fatal("redis-benchmark is not on PATH (it comes with Debian's redis-server package)")
	}
	res, err := harness.RunBench(ctx, srv.Redis, harness.BenchConfig{
		Algorithms: []string{"sliding-log"}, Clients: 4, Pipeline: 4, Requests: 2000, Keys: 1000,
		Limit: algorithms.Limit{Limit: 100, Window: time.Minute}, CompareRedisBenchmark: true, RedisBenchmark: rb,
		Rounds: 2,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || len(res.Results) != 2 {
		t.Fatalf("complete %v rows %d", res.Complete, len(res.Results))
	}
	for _, r := range res.Results {
		if r.Decisions != 4000 || r.Errors != 0 || len(r.Runs) != 4 {
			t.Errorf("%s: %d decisions %d errors %d runs; want 4000 0 4", r.Path, r.Decisions, r.Errors, len(r.Runs))
		}
		if r.DecisionsPerS <= 0 || r.RedisBenchmarkPerS <= 0 || r.Ratio <= 0 || r.P50US <= 0 || r.ServerUSPerCall <= 0 || len(r.CDF) == 0 {
			t.Errorf("%s: %+v", r.Path, r)
		}
		tools := []string{}
		for _, run := range r.Runs {
			tools = append(tools, run.Tool)
		}
		if want := []string{"ratelab", "redis-benchmark", "redis-benchmark", "ratelab"}; !slices.Equal(tools, want) {
			t.Errorf("%s: runs %v, want alternating %v", r.Path, tools, want)
		}
	}
	// allow: 2000 decisions over 1000 keys never reach 100 on one key; deny:
	// one key, 100 accepted per run, the rest denied
	if a := res.Results[0]; a.Path != measure.PathAllow || a.Allowed != 4000 {
		t.Errorf("allow path: %s allowed %d of %d", a.Path, a.Allowed, a.Decisions)
	}
	if d := res.Results[1]; d.Path != measure.PathDeny || d.Allowed != 200 || d.Denied != 3800 {
		t.Errorf("deny path: %s allowed %d denied %d", d.Path, d.Allowed, d.Denied)
	}
	if keys, _ := engine.ScanKeys(ctx, srv.Client(), res.Config.Prefix); len(keys) != 0 {
		t.Errorf("keys left behind: %d", len(keys))
	}
}

// With a target rate the latencies are corrected and the rate holds roughly.
func TestRunBenchRate(t *testing.T) {
	res, err := harness.RunBench(ctx, srv.Redis, harness.BenchConfig{
		Algorithms: []string{"fixed-window"}, Paths: []string{measure.PathDeny},
		Clients: 2, Pipeline: 1, Requests: 200, Rate: 2000,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results[0]
	if !r.Corrected || r.Decisions != 200 || r.RatePerS != 2000 {
		t.Errorf("corrected %v decisions %d rate %v", r.Corrected, r.Decisions, r.RatePerS)
	}
}
