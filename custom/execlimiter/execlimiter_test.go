package execlimiter_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/custom/execlimiter"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/internal/testenv"
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

// t0 is the virtual instant tests start at: 2026-01-01T00:00:00Z.
var t0 = time.Unix(1767225600, 0)

// hangBound is how long a test lets an adapter that never answers hang:
// a bound that detects the hang, not a wait for behaviour.
const hangBound = 300 * time.Millisecond

// open returns the exec target of command for 3 per 1s, each answer (the
// first included) bounded by timeout (zero: the defaults), closed when t
// ends.
func open(t *testing.T, command string, timeout time.Duration) *execlimiter.Limiter {
	t.Helper()
	l, err := execlimiter.New(ctx, srv.Client(), execlimiter.Config{Command: command, Limit: limit.Limit{Count: 3, Window: time.Second},
		Timeout: timeout, Startup: timeout, Prefix: srv.Key(t) + ":ep:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

// gone reports whether no live process of group pgid is left (a killed
// one not yet reaped by init is a zombie: dead).
func gone(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its ")"
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			return false
		}
	}
	return true
}

// The answers' fields reach the Decision; the environment reaches the
// adapter; the adapter is handed the key, cost and instant.
func TestAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer string
		want   algorithms.Decision
	}{
		{"allowed only", `{"allowed": true}`, algorithms.Decision{Allowed: true}},
		{"remaining from the environment", `{"allowed": true, "remaining": $RATELAB_LIMIT}`, algorithms.Decision{Allowed: true, Remaining: 3}},
		{"retry after, in ms", `{"allowed": false, "retry_after_ms": 1.5}`, algorithms.Decision{RetryAfter: 1500 * time.Microsecond}},
		{"retry after on an allowed request is not one", `{"allowed": true, "retry_after_ms": 9}`, algorithms.Decision{Allowed: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := open(t, `while read -r line; do echo "`+strings.ReplaceAll(c.answer, `"`, `\"`)+`"; done`, 0)
			at := t0.Add(1500 * time.Microsecond)
			d, err := l.Allow(ctx, "user", 1, algorithms.At(at))
			if err != nil {
				t.Fatal(err)
			}
			c.want.DecidedAt = at
			if d != c.want {
				t.Errorf("got %+v, want %+v", d, c.want)
			}
		})
	}
	t.Run("request line and environment", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		log := filepath.Join(dir, "log")
		l := open(t, `echo "$RATELAB_LIMIT $RATELAB_WINDOW_MS ${REDIS_URL%%:*}" >`+log+`; while read -r line; do echo "$line" >>`+log+`; echo '{"allowed": true}'; done`, 0)
		if _, err := l.Allow(ctx, "k{user}", 2, algorithms.At(t0.Add(time.Microsecond))); err != nil {
			t.Fatal(err)
		}
		_ = l.Close()
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		want := "3 1000 redis\n" + `{"key":"k{user}","cost":2,"now_us":1767225600000001}` + "\n"
		if string(b) != want {
			t.Errorf("the adapter saw\n%s\nwant\n%s", b, want)
		}
	})
}

// An adapter that breaks the protocol is an error naming the process,
// the offending line and its stderr; its process group is gone after it.
func TestBrokenAdapters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		command string
		want    []string // in the error's text
	}{
		{"exits", `echo "Traceback: no module named limits" >&2; exit 3`,
			[]string{"exited (exit status 3) before answering", "no module named limits", `the request: {"key":"user"`}},
		{"bad line", `read -r line; echo 'allowed'; sleep 100`,
			[]string{`not an answer {"allowed": true|false}`, `its line: "allowed"`}},
		{"no allowed", `read -r line; echo '{"remaining": 1}'; sleep 100`, []string{`the answer has no "allowed"`}},
		{"misspelt field", `read -r line; echo '{"allowed": true, "retry_after": 1}'; sleep 100`, []string{`unknown field "retry_after"`}},
		{"hangs", `echo "waiting for Redis" >&2; sleep 100`, []string{"no answer within 300ms (the timeout)", "waiting for Redis"}},
		{"hangs after its first answer", `read -r l; echo '{"allowed": true}'; sleep 100`, []string{"no answer within 300ms (the timeout)"}},
		{"closes stdout", `exec >&-; echo "closed" >&2; sleep 100`, []string{"closed its stdout before answering", "closed"}},
		{"exits, its child holding stdout", `sleep 100 & exit 4`, []string{"exited (exit status 4) before answering"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			command := `sleep 100 >/dev/null 2>&1 & ` + c.command // a second process in the group
			l := open(t, command, hangBound)
			var err error
			for i := 0; i < 2 && err == nil; i++ { // the second: after a first answer
				_, err = l.Allow(ctx, "user", 1, algorithms.At(t0))
			}
			var ae *execlimiter.AdapterError
			if !errors.As(err, &ae) || !errors.As(err, new(*custom.ScriptError)) {
				t.Fatalf("got %v, want a *custom.ScriptError wrapping an *execlimiter.AdapterError", err)
			}
			msg := err.Error()
			for _, w := range append(c.want, "exec "+strconv.Quote(command)) {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not say %q:\n%s", w, msg)
				}
			}
			if ae.PID == 0 || !gone(ae.PID) {
				t.Errorf("process group %d is still there", ae.PID)
			}
			if len(l.Processes()) != 0 {
				t.Errorf("the pool still holds %v", l.Processes())
			}
		})
	}
}

// The processes and what they started go with Close, and with the context
// New was given; a cost above the limit starts nothing.
func TestNothingLeftBehind(t *testing.T) {
	t.Parallel()
	const adapter = `sleep 100 & while read -r line; do echo '{"allowed": true}'; done`
	t.Run("close", func(t *testing.T) {
		t.Parallel()
		l := open(t, adapter, 0)
		if _, err := l.Allow(ctx, "user", 4, algorithms.At(t0)); !errors.Is(err, algorithms.ErrCostExceedsLimit) {
			t.Fatalf("cost 4 of 3: got %v, want ErrCostExceedsLimit", err)
		}
		if _, err := l.Allow(ctx, "user", 1, algorithms.At(t0)); err != nil {
			t.Fatal(err)
		}
		pids := l.Processes()
		if len(pids) != 1 {
			t.Fatalf("%d processes after one decision, want 1", len(pids))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if !gone(pids[0]) {
			t.Errorf("process group %d is still there after Close", pids[0])
		}
		if _, err := l.Allow(ctx, "user", 1, algorithms.At(t0)); err == nil {
			t.Error("a closed target decided")
		}
	})
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		cctx, cancel := context.WithCancel(ctx)
		l, err := execlimiter.New(cctx, srv.Client(), execlimiter.Config{Command: adapter, Limit: limit.Limit{Count: 3, Window: time.Second}, Prefix: srv.Key(t) + ":ep:"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Allow(ctx, "user", 1, algorithms.At(t0)); err != nil {
			t.Fatal(err)
		}
		pids := l.Processes()
		cancel()
		_ = l.Close() // waits for the close the cancel began
		if !gone(pids[0]) {
			t.Errorf("process group %d is still there after the context ended", pids[0])
		}
	})
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg  execlimiter.Config
		want string
	}{
		{execlimiter.Config{Limit: limit.Limit{Count: 1, Window: time.Second}}, "command: empty"},
		{execlimiter.Config{Command: "cat", Limit: limit.Limit{Count: 1, Window: time.Second}, Timeout: -1}, "timeout: must be >= 0"},
		{execlimiter.Config{Command: "cat"}, "limit"},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

// python is a python3 with Debian's limits and redis modules.
func python(t *testing.T) string {
	return testenv.Interpreter(t, "exec-adapters", []string{"-c", "import limits, redis"}, "/usr/bin/python3", "python3")
}

// The Python limits adapter decides on the virtual clock: its library's
// time.time (the moving window's timestamps) and its keys' TTLs (the
// fixed window's EXPIRE) both run on now_us, so a window of 1 s passes
// without a wait.
func TestLimitsAdapterOnVirtualTime(t *testing.T) {
	t.Parallel()
	py := python(t)
	steps := []struct {
		at      time.Duration
		allowed bool
	}{
		{0, true}, {time.Millisecond, true}, {2 * time.Millisecond, true}, {500 * time.Millisecond, false},
		{time.Second + 3*time.Millisecond, true}, // a whole window after every hit: both strategies start again
	}
	for _, strategy := range []string{"fixed-window", "moving-window"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			l := open(t, py+" ../../docs/adapters/limits_adapter.py "+strategy, 10*time.Second)
			key := srv.Key(t)
			for i, s := range steps {
				d, err := l.Allow(ctx, key, 1, algorithms.At(t0.Add(s.at)))
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed != s.allowed {
					t.Errorf("step %d (+%s): allowed %v, want %v", i, s.at, d.Allowed, s.allowed)
				}
			}
		})
	}
}
