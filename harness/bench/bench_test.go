package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/bench"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var ctx = context.Background()

// The call CallOf describes, replayed by hand, decides exactly as Allow
// does on a twin key: bench and redis-benchmark send what the limiter sends.
func TestCallOfReplaysAllow(t *testing.T) {
	l := limit.Limit{Count: 3, Window: time.Minute}
	for _, alg := range algorithms.Names() {
		t.Run(alg, func(t *testing.T) {
			lim, err := algorithms.New(alg, srv.Client(), l)
			if err != nil {
				t.Fatal(err)
			}
			call, err := bench.CallOf(lim)
			if err != nil {
				t.Fatal(err)
			}
			if alg == "sliding-log" && len(call.Nonce) != 1 {
				t.Errorf("sliding-log: nonce positions %v, want one", call.Nonce)
			}
			base := srv.Key(t)
			viaAllow, viaCall := "{"+base+":a}", "{"+base+":c}"
			for i := range 5 {
				d, err := lim.Allow(ctx, viaAllow, 1, algorithms.RedisTime())
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

// A limiter that is not Scripted (an HTTP endpoint) has no script call to
// replay: refused with an error naming the algorithms field.
func TestCallOfRefusesUnscripted(t *testing.T) {
	lim, err := custom.NewHTTPLimiter("http://127.0.0.1:1/allow?key={key}", limit.Limit{Count: 3, Window: time.Minute}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bench.CallOf(lim)
	if name, ok := field.Name(err); !ok || name != "algorithms" || !strings.Contains(err.Error(), "not a Scripted limiter") {
		t.Errorf("got %v (field %q), want a field error on algorithms saying it is not scripted", err, name)
	}
}

func TestRedisBenchmarkCommand(t *testing.T) {
	call := bench.Call{SHA: "abc", Args: []string{"100", "60000000", "1", "", "salt1"}, Nonce: []int{4}}
	cases := []struct {
		path string
		want string
	}{
		{measure.PathAllow, `EVALSHA abc 1 p:{__rand_int__} 100 60000000 1  __rand_int__`},
		{measure.PathDeny, `EVALSHA abc 1 p:{hot} 100 60000000 1  __rand_int__`},
	}
	for _, c := range cases {
		if got := strings.Join(bench.RedisBenchmarkCommand(call, c.path, "p:"), " "); got != c.want {
			t.Errorf("%s: got %q, want %q", c.path, got, c.want)
		}
	}
}

// Validate names the field of each bad value (cmd maps it to its flag).
func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*bench.Config)
		field string
		want  string
	}{
		{"unknown algorithm", func(c *bench.Config) { c.Algorithms = []string{"leaky"} }, "algorithms", `unknown algorithm "leaky"`},
		{"no paths", func(c *bench.Config) { c.Paths = nil }, "paths", "give allow, deny or both"},
		{"unknown path", func(c *bench.Config) { c.Paths = []string{"sideways"} }, "paths", `unknown path "sideways"`},
		{"limit zero", func(c *bench.Config) { c.Limit.Count = 0 }, "limit", "must be >= 1, got 0"},
		{"short window", func(c *bench.Config) { c.Limit.Window = time.Microsecond }, "window", "must be >= 1ms"},
		{"long window", func(c *bench.Config) { c.Limit.Window = 1_000_000 * time.Hour }, "window", "at most 3650d (ten years)"},
		{"clients zero", func(c *bench.Config) { c.Clients = 0 }, "clients", "must be in 1..1000, got 0"},
		{"clients many", func(c *bench.Config) { c.Clients = 1001 }, "clients", "must be in 1..1000, got 1001"},
		{"pipeline zero", func(c *bench.Config) { c.Pipeline = 0 }, "pipeline", "must be >= 1, got 0"},
		{"pipeline huge", func(c *bench.Config) { c.Pipeline = 1 << 30 }, "pipeline", "must be at most 10000"},
		{"negative duration", func(c *bench.Config) { c.Duration = -time.Second }, "duration", "must be > 0, got -1s"},
		{"negative requests", func(c *bench.Config) { c.Requests = -1 }, "requests", "must be >= 0, got -1"},
		{"keys zero", func(c *bench.Config) { c.Keys = 0 }, "keys", "must be >= 1, got 0"},
		{"keys huge", func(c *bench.Config) { c.Keys = 1e12 }, "keys", "must be at most 10000000"},
		{"negative rate", func(c *bench.Config) { c.Rate = -5 }, "rate", "must be >= 0, got -5"},
		{"rate with comparison", func(c *bench.Config) { c.Rate = 1000; c.CompareRedisBenchmark = true }, "rate", "redis-benchmark cannot pace"},
		{"negative rounds", func(c *bench.Config) { c.Rounds = -1 }, "rounds", "must be >= 0, got -1"},
		{"negative procs", func(c *bench.Config) { c.Procs = -1 }, "procs", "must be in 0..256, got -1"},
		// GOMAXPROCS 100000 aborted the runtime (thread exhaustion)
		{"procs past the bound", func(c *bench.Config) { c.Procs = 100_000 }, "procs", "must be in 0..256, got 100000"},
		{"rounds past the bound", func(c *bench.Config) { c.Rounds = 1001 }, "rounds", "must be at most 1000"},
		// a hot key that cannot fill in the warm-up
		{"deny limit past the bound", func(c *bench.Config) { c.Limit.Count = 1e18 }, "limit", "at most 100000 with the deny path"},
		{"missing redis-benchmark", func(c *bench.Config) { c.CompareRedisBenchmark = true; c.RedisBenchmark = "/nonexistent/rb" },
			"compare-redis-benchmark", "/nonexistent/rb not found"},
	}
	if err := (bench.Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("Config{}.WithDefaults(): %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := (bench.Config{}).WithDefaults()
			c.edit(&cfg)
			err := cfg.Validate()
			if name, _ := field.Name(err); name != c.field || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v (field %q), want field %q saying %q", err, name, c.field, c.want)
			}
		})
	}
}

// A small comparison run: both paths do what they say, redis-benchmark
// runs the same call, and nothing is left behind.
func TestRun(t *testing.T) {
	rb, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Fatal("redis-benchmark is not on PATH (it comes with Debian's redis-server package)")
	}
	cfg := (bench.Config{}).WithDefaults()
	cfg.Algorithms, cfg.Clients, cfg.Pipeline, cfg.Requests, cfg.Keys = []string{"sliding-log"}, 4, 4, 2000, 1000
	cfg.Limit = limit.Limit{Count: 100, Window: time.Minute}
	cfg.CompareRedisBenchmark, cfg.RedisBenchmark, cfg.Rounds = true, rb, 2
	res, err := bench.Run(ctx, srv.Redis, cfg, nil)
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
		if r.DecisionsPerS <= 0 || r.RedisBenchmarkPerS <= 0 || r.VsRedisBenchmark <= 0 || r.P50US <= 0 || r.ServerUSPerCall <= 0 || len(r.CDF) == 0 {
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
	if keys, _ := server.ScanKeys(ctx, srv.Client(), res.Config.Prefix); len(keys) != 0 {
		t.Errorf("keys left behind: %d", len(keys))
	}
}

// With a target rate the latencies are corrected and the rate holds
// roughly; the CPU profile of the bench is written.
func TestRunRate(t *testing.T) {
	cfg := (bench.Config{}).WithDefaults()
	cfg.Algorithms, cfg.Paths = []string{"fixed-window"}, []string{measure.PathDeny}
	cfg.Clients, cfg.Pipeline, cfg.Requests, cfg.Rate = 2, 1, 200, 2000
	var profile bytes.Buffer
	cfg.CPUProfile = &profile
	res, err := bench.Run(ctx, srv.Redis, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if profile.Len() == 0 {
		t.Error("no CPU profile written")
	}
	r := res.Results[0]
	if !r.Corrected || r.Decisions != 200 || r.RatePerS != 2000 {
		t.Errorf("corrected %v decisions %d rate %v", r.Corrected, r.Decisions, r.RatePerS)
	}
}

// a SCRIPT FLUSH during the bench costs nothing. Calls
// refused with NOSCRIPT are loaded again and resent, never counted as
// decisions: every decision counted is a real allow or deny, with no
// errors, at pipeline 1 (where, without the reload, every later call
// fails) and 16.
func TestRunSurvivesScriptFlush(t *testing.T) {
	for _, pipeline := range []int{1, 16} {
		t.Run(fmt.Sprintf("pipeline-%d", pipeline), func(t *testing.T) {
			cfg := (bench.Config{}).WithDefaults()
			cfg.Algorithms, cfg.Clients, cfg.Pipeline = []string{"sliding-log"}, 4, pipeline // default key space: the allow path never fills a key
			cfg.Duration = 1200 * time.Millisecond
			stop := make(chan struct{})
			var wg sync.WaitGroup
			flushes := 0
			wg.Add(1)
			go func() { // SCRIPT FLUSH every 50 ms while the bench runs
				defer wg.Done()
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if srv.Client().ScriptFlush(ctx).Err() == nil {
							flushes++
						}
					}
				}
			}()
			res, err := bench.Run(ctx, srv.Redis, cfg, nil)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatalf("after %d flushes: %v", flushes, err)
			}
			if flushes < 10 {
				t.Fatalf("only %d SCRIPT FLUSH during the bench", flushes)
			}
			for _, r := range res.Results {
				if r.Errors != 0 || r.Decisions == 0 || r.Allowed+r.Denied != r.Decisions {
					t.Errorf("%s: %d decisions = %d allowed + %d denied, %d errors; want only real decisions, no errors",
						r.Path, r.Decisions, r.Allowed, r.Denied, r.Errors)
				}
			}
			if a := res.Results[0]; a.Denied != 0 {
				t.Errorf("allow path: %d denied", a.Denied)
			}
			if d := res.Results[1]; d.Denied == 0 || d.Allowed > 100 {
				t.Errorf("deny path: %d allowed %d denied; want at most the limit allowed", d.Allowed, d.Denied)
			}
		})
	}
}

// A deny path whose first warm-up is too short to reach the limit (a
// loaded machine: a CI rehearsal at load 15 made 60 calls in a 75 ms
// warm-up against a limit of 100) is warmed on until the key is denied, not
// refused: here a 250 µs warm-up, too short for 1,000 calls on any machine.
// The measured runs (1 ms each, on a key of their own) cannot fill it
// either, so the error must come from them, not from the warm-up.
func TestRunDenyPathWarmsOn(t *testing.T) {
	cfg := (bench.Config{}).WithDefaults()
	cfg.Algorithms, cfg.Paths, cfg.Clients = []string{"fixed-window"}, []string{measure.PathDeny}, 2
	cfg.Limit.Count = 1000
	cfg.Duration = time.Millisecond
	_, err := bench.Run(ctx, srv.Redis, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "never denied in the measured runs") {
		t.Errorf("got %v, want the warm-up to go on until the key is denied (and the 1 ms measured runs to fall short)", err)
	}
}

// a limit the deny path never reaches is an error
// naming the limit, found in the deny path's warm-up, not a row of
// "deny" decisions that were all allowed.
func TestRunDenyPathMustDeny(t *testing.T) {
	cfg := (bench.Config{}).WithDefaults()
	cfg.Algorithms, cfg.Paths, cfg.Clients = []string{"fixed-window"}, []string{measure.PathDeny}, 2
	cfg.Limit.Count = bench.MaxDenyLimit // the largest Validate takes (1e18 is refused up front): no 100 ms warm-up fills it
	cfg.Duration = 400 * time.Millisecond
	start := time.Now()
	res, err := bench.Run(ctx, srv.Redis, cfg, nil)
	if name, _ := field.Name(err); name != "limit" || !strings.Contains(err.Error(), "never denied") {
		t.Fatalf("got %v (field %q), want an error on limit saying the hot key was never denied", err, name)
	}
	if res == nil || res.Complete || len(res.Results) != 0 {
		t.Errorf("results %+v: want incomplete, no deny row", res)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("found after %s: want it from the warm-up", d)
	}
	if keys, _ := server.ScanKeys(ctx, srv.Client(), res.Config.Prefix); len(keys) != 0 {
		t.Errorf("keys left behind: %d", len(keys))
	}
	var fe *field.Error
	if !errors.As(err, &fe) || !strings.Contains(fe.Err.Error(), "fixed-window deny path") {
		t.Errorf("the error does not say which algorithm and path: %v", err)
	}
}
