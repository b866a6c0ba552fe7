package ratelabtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/measure"
)

// recorder is a testing.TB that keeps what Verify says instead of failing
// the test that runs it: the real t serves everything else (Cleanup,
// TempDir, Name).
type recorder struct {
	testing.TB
	mu                    sync.Mutex
	errors, fatals, skips []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skips = append(r.skips, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

// record runs f with a recorder in a goroutine of its own (Fatalf and
// Skipf end it, as they end a test).
func record(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

var (
	correct = Target{Script: filepath.Join("testdata", "sliding-log.lua"), Args: []string{"{now_us}", "{window_us}", "{limit}", "{request_id}"}}
	broken  = Target{Script: filepath.Join("testdata", "fixed-window.lua"),
		Keys: []string{"{key}:{floor(now_ms / window_ms)}"}, Args: []string{"{window_ms}", "{limit}"}}
)

func noEnvRedis(t *testing.T) {
	for _, name := range RedisEnv {
		t.Setenv(name, "")
	}
}

// The corrected twin holds: the test passes, the report says so.
func TestVerifyPasses(t *testing.T) {
	noEnvRedis(t)
	r := record(t, func(tb testing.TB) {
		rep := Verify(tb, correct, "5/200ms")
		if rep == nil || rep.Verdict != measure.Holds {
			tb.Errorf("report %+v, want holds", rep)
		}
	})
	if len(r.errors)+len(r.fatals)+len(r.skips) > 0 {
		t.Errorf("the correct limiter did not pass: errors %q, fatals %q, skips %q", r.errors, r.fatals, r.skips)
	}
}

// The broken twin fails the test with the counter-example table.
func TestVerifyFailsWithCounterExample(t *testing.T) {
	noEnvRedis(t)
	var rep *measure.VerifyReport
	r := record(t, func(tb testing.TB) { rep = Verify(tb, broken, "5/200ms") })
	if len(r.fatals) > 0 || len(r.skips) > 0 {
		t.Fatalf("fatals %q, skips %q", r.fatals, r.skips)
	}
	if len(r.errors) != 1 {
		t.Fatalf("%d errors, want 1: %q", len(r.errors), r.errors)
	}
	msg := r.errors[0]
	for _, want := range []string{"ratelabtest: fixed-window.lua: violated (5 per 200ms", "COUNTER-EXAMPLE (VIOLATED)", "|    family    |", "6 requests, every one accepted in the window and needed (time from the boundary"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure lacks %q:\n%s", want, msg)
		}
	}
	if rep == nil || rep.CounterExample == nil || rep.CounterExample.Accepted <= rep.CounterExample.Limit {
		t.Errorf("report's counter-example: %+v", rep)
	}
}

// Neither a Redis in the environment nor redis-server on PATH: skipped,
// with the reason.
func TestSkipsWithoutRedis(t *testing.T) {
	noEnvRedis(t)
	t.Setenv("PATH", t.TempDir())
	r := record(t, func(tb testing.TB) { Verify(tb, correct, "5/200ms") })
	if len(r.skips) != 1 || len(r.errors)+len(r.fatals) > 0 {
		t.Fatalf("skips %q, errors %q, fatals %q; want one skip", r.skips, r.errors, r.fatals)
	}
	for _, want := range []string{"neither $RATELAB_REDIS nor $REDIS_URL is set", "redis-server is not on PATH"} {
		if !strings.Contains(r.skips[0], want) {
			t.Errorf("skip reason %q lacks %q", r.skips[0], want)
		}
	}
}

// REDIS_URL is taken (the script then runs guarded, as on a user's
// Redis); one that cannot be reached fails the test, never skips it.
func TestRedisFromEnv(t *testing.T) {
	noEnvRedis(t)
	srv, err := localredis.Start(context.Background(), 10*time.Second, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("REDIS_URL", "redis://"+srv.Info.Addr)
	r := record(t, func(tb testing.TB) {
		rd := Redis(tb)
		if rd.Info.Mode == "exec" || rd.Info.Addr != srv.Info.Addr {
			tb.Errorf("Redis %+v, want the one of REDIS_URL (%s)", rd.Info, srv.Info.Addr)
		}
		VerifyOn(tb, rd, broken, "5/200ms")
	})
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "COUNTER-EXAMPLE") || len(r.fatals) > 0 {
		t.Errorf("on REDIS_URL: errors %q, fatals %q", r.errors, r.fatals)
	}
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1")
	r = record(t, func(tb testing.TB) { Redis(tb) })
	if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "the Redis of $REDIS_URL") || len(r.skips) > 0 {
		t.Errorf("unreachable REDIS_URL: fatals %q, skips %q", r.fatals, r.skips)
	}
}

// Bad input is a clear failure before any Redis call.
func TestVerifyBadInput(t *testing.T) {
	noEnvRedis(t)
	for _, c := range []struct {
		target Target
		limits []string
		want   string
	}{
		{correct, []string{"5 per second"}, `limits ["5 per second"]`},
		{correct, nil, "limit: none given"},
		{Target{Script: "testdata/nope.lua"}, []string{"5/1s"}, "nope.lua"},
		{Target{Algorithm: "sliding-log", Script: correct.Script}, []string{"5/1s"}, "exactly one target"},
	} {
		r := record(t, func(tb testing.TB) { Verify(tb, c.target, c.limits...) })
		if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], c.want) {
			t.Errorf("%+v %q: fatals %q, want one holding %q", c.target, c.limits, r.fatals, c.want)
		}
	}
}

// Importing the helper compiles no Docker client, testcontainers or
// OpenTelemetry (the SDK: go-redis's own internal/otel is no import of it),
// and no plotting package (the report's table is all it renders).
func TestNoDockerInHelper(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test=false", "github.com/ratelab/ratelab/ratelabtest").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var nonStd, bad []string
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, ".") {
			nonStd = append(nonStd, p)
		}
		for _, s := range []string{"docker", "moby", "testcontainers", "opentelemetry", "harness/engine", "gonum.org/v1/plot"} {
			if strings.Contains(p, s) {
				bad = append(bad, p)
			}
		}
	}
	t.Logf("ratelabtest pulls %d non-standard packages", len(nonStd))
	if len(bad) > 0 {
		t.Errorf("ratelabtest depends on %d packages it must not: %s", len(bad), strings.Join(bad, ", "))
	}
}

// pathWithout is $PATH with the directories that hold name replaced by
// copies of them in links, name left out.
func pathWithout(t *testing.T, name string) string {
	t.Helper()
	var dirs []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			dirs = append(dirs, dir)
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		farm := t.TempDir()
		for _, e := range entries {
			if e.Name() != name {
				if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(farm, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		dirs = append(dirs, farm)
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

// A module of its own (docs/examples/gotest, outside this one) uses the
// helper from `go test`: its test passes with a redis-server on PATH, and
// is skipped, saying why, without one.
func TestExampleModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	// a copy of the module, its replace pointing at this checkout: go
	// test there may update its go.mod and go.sum, never the repository's
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"go.mod", "go.sum", "limiter.lua", "limiter_test.go"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", "examples", "gotest", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "go.mod" {
			b = []byte(strings.Replace(string(b), "=> ../../..", "=> "+root, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(path string) (string, time.Duration, error) {
		cmd := exec.Command(goBin, "test", "-count=1", "-v", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+path, "REDIS_URL=", "RATELAB_REDIS=", "GOFLAGS=-mod=mod")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		return string(out), time.Since(start), err
	}
	out, took, err := run(os.Getenv("PATH"))
	if err != nil || !strings.Contains(out, "--- PASS: TestLimiterKeepsItsLimit") {
		t.Fatalf("go test in %s with redis-server: %v\n%s", dir, err, out)
	}
	t.Logf("go test with redis-server: %v (build included)\n%s", took.Round(time.Millisecond), out)
	// without redis-server: PATH as it is but for redis-server (the same
	// C compiler: the same build, from the cache)
	out, _, err = run(pathWithout(t, "redis-server"))
	if err != nil || !strings.Contains(out, "--- SKIP: TestLimiterKeepsItsLimit") || !strings.Contains(out, "redis-server is not on PATH") {
		t.Errorf("go test in %s without redis-server: %v\n%s", dir, err, out)
	}
}

// VerifyOn prepares a script as `ratelab verify` does: one that does not
// compile fails before its first call, naming the file and Redis's
// message; on a Redis ratelab did not start, one that writes and then
// loops (it would leave that Redis answering BUSY to everyone) is refused
// after a throwaway server tried it, before it reaches that Redis.
func TestVerifyPreparedAsTheCommand(t *testing.T) {
	noEnvRedis(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.lua")
	loops := filepath.Join(dir, "loops.lua")
	if err := os.WriteFile(bad, []byte("return 1 +\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loops, []byte("redis.call('SET', KEYS[1], 1)\nwhile true do end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := record(t, func(tb testing.TB) { Verify(tb, Target{Script: bad}, "5/1s") })
	if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "bad.lua does not compile: ERR Error compiling script") {
		t.Errorf("a script that does not compile: fatals %q, errors %q", r.fatals, r.errors)
	}

	srv, err := localredis.Start(context.Background(), 10*time.Second, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("REDIS_URL", "redis://"+srv.Info.Addr)
	r = record(t, func(tb testing.TB) { Verify(tb, Target{Script: loops, Keys: []string{"{key}"}}, "5/1s") })
	if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "loops.lua") || !strings.Contains(r.fatals[0], "BUSY") {
		t.Errorf("a script that loops, on a user's Redis: fatals %q, errors %q", r.fatals, r.errors)
	}
	if err := srv.Client.Ping(context.Background()).Err(); err != nil {
		t.Errorf("the user's Redis after the looping script: %v", err)
	}
}
