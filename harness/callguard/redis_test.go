package callguard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/callguard"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/limit"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// decisions runs calls of a fixed window (20 a second) on one key, 16 per
// round trip of a guard, in virtual time; before each round trip whose
// index flush says, the server's script cache is flushed. It returns the
// decisions and the guard.
func decisions(t *testing.T, prefix string, flush func(trip int) bool) ([]bool, *callguard.Guard) {
	t.Helper()
	ctx := context.Background()
	l := limit.Limit{Count: 20, Window: time.Second}
	lim, err := algorithms.New("fixed-window", srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	s := lim.(algorithms.Scripted)
	g := callguard.New(callguard.Config{Timeout: 5 * time.Second, PerTimeout: 16, Stall: true, MaxOutage: time.Second})
	pipe := algorithms.NewScriptPipe(srv.Client())
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []bool
	for i := range 20 {
		calls := make([]algorithms.ScriptCall, 16)
		for k := range calls {
			at := base.Add(time.Duration(i*16+k) * 25 * time.Millisecond)
			if calls[k], err = s.Call(prefix+"{k}", 1, algorithms.At(at)); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			if err := g.Load(ctx, srv.Client(), calls); err != nil {
				t.Fatal(err)
			}
		}
		if flush(i) {
			if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		tr := g.Begin(ctx, len(calls))
		cmds, err := tr.Exec(pipe, calls)
		if serr := tr.End(err); err != nil || serr != nil {
			t.Fatalf("round trip %d: %v (stall: %v)", i, err, serr)
		}
		for k, cmd := range cmds {
			v, err := cmd.Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("round trip %d call %d: %v", i, k, err)
			}
			d, err := s.Decode(calls[k], v)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d.Allowed)
		}
		if err := g.Note(nil); err != nil {
			t.Fatal(err)
		}
	}
	return got, g
}

// SCRIPT FLUSH in the middle of a run: the calls refused with NOSCRIPT
// are loaded and resent, the decisions are those of a run without a
// flush, and the guard counts one reload per flush.
func TestScriptFlushMidRun(t *testing.T) {
	want, g := decisions(t, srv.Key(t), func(int) bool { return false })
	if g.Reloads() != 0 {
		t.Errorf("no flush: %d reloads, want 0", g.Reloads())
	}
	got, g := decisions(t, srv.Key(t), func(i int) bool { return i%3 == 1 })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decisions with SCRIPT FLUSH:\n%v\nwithout:\n%v", got, want)
	}
	if g.Reloads() != 7 {
		t.Errorf("7 flushes: %d reloads, want 7", g.Reloads())
	}
}

// Load sends SCRIPT LOAD once per script and Guard: a flush after it is
// mended by the round trip that meets NOSCRIPT, not by Load.
func TestLoadOnce(t *testing.T) {
	ctx := context.Background()
	lim, err := algorithms.New("sliding-log", srv.Client(), limit.Limit{Count: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	call, err := lim.(algorithms.Scripted).Call(srv.Key(t)+"{k}", 1, algorithms.At(time.Unix(1e9, 0)))
	if err != nil {
		t.Fatal(err)
	}
	c := srv.Client()
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	g := callguard.New(callguard.Config{})
	calls := []algorithms.ScriptCall{call, call}
	if err := g.Load(ctx, c, calls); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.ScriptExists(ctx, call.Script.Hash()).Result(); err != nil || !ok[0] {
		t.Fatalf("after Load: SCRIPT EXISTS %v %v, want loaded", ok, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.Load(ctx, c, calls); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.ScriptExists(ctx, call.Script.Hash()).Result(); ok[0] {
		t.Error("Load loaded a script this guard had loaded before")
	}
	tr := g.Begin(ctx, 1)
	cmds, err := tr.Exec(algorithms.NewScriptPipe(c), calls[:1])
	_ = tr.End(err)
	if err != nil || cmds[0].Err() != nil || g.Reloads() != 1 {
		t.Errorf("round trip after the flush: %v, %v, %d reloads; want an answer after 1 reload", err, cmds[0].Err(), g.Reloads())
	}
}

// A Redis that stops answering (CLIENT PAUSE) stalls a round trip: its
// bound runs out, and End returns a *StallError of that bound.
func TestStallOnPausedServer(t *testing.T) {
	ctx := context.Background()
	opt := *srv.Client().Options()
	opt.MaxRetries = -1
	c := redis.NewClient(&opt)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil { // a connection open before the pause
		t.Fatal(err)
	}
	lim, err := algorithms.New("fixed-window", c, limit.Limit{Count: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	call, err := lim.(algorithms.Scripted).Call(srv.Key(t)+"{k}", 1, algorithms.At(time.Unix(1e9, 0)))
	if err != nil {
		t.Fatal(err)
	}
	// the pause ends by itself (a CLIENT UNPAUSE would wait for it too)
	if err := srv.Client().Do(ctx, "CLIENT", "PAUSE", 700, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Client().Ping(ctx).Err(); err != nil {
			t.Errorf("after the pause: %v", err)
		}
	}()
	g := callguard.New(callguard.Config{Timeout: 200 * time.Millisecond, Stall: true})
	tr := g.Begin(ctx, 1)
	_, err = tr.Exec(algorithms.NewScriptPipe(c), []algorithms.ScriptCall{call})
	serr := tr.End(err)
	var se *callguard.StallError
	if !errors.As(serr, &se) || se.Bound != 200*time.Millisecond || !tr.TimedOut {
		t.Fatalf("round trip to a paused server: %v, End %v, TimedOut %v; want a StallError of 200ms", err, serr, tr.TimedOut)
	}
	if waited := tr.Recv.Sub(tr.Sent); waited > 2*time.Second {
		t.Errorf("the stalled round trip waited %s, want about its 200ms bound", waited)
	}
}

// Another client's script past busy-reply-threshold: the server answers
// BUSY, and the guard notes it (and counts it towards an outage).
func TestBusyReply(t *testing.T) {
	ctx := context.Background()
	c := srv.Client()
	if err := c.ConfigSet(ctx, "busy-reply-threshold", "50").Err(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.ConfigSet(ctx, "busy-reply-threshold", "5000").Err(); err != nil {
			t.Error(err)
		}
	}()
	opt := *c.Options()
	opt.ReadTimeout, opt.MaxRetries = -1, -1 // it waits for its script, however long
	other := redis.NewClient(&opt)
	defer other.Close()
	done := make(chan error, 1)
	running := false
	started := func() {
		running = true
		go func() { done <- other.Eval(ctx, "while true do end", nil).Err() }()
	}
	defer func() {
		if !running {
			return
		}
		stop := time.Now().Add(5 * time.Second)
		for c.ScriptKill(ctx).Err() != nil && time.Now().Before(stop) {
			time.Sleep(10 * time.Millisecond) // until the script is running
		}
		if err := <-done; err == nil {
			t.Error("the looping script returned without SCRIPT KILL")
		}
	}()
	lim, err := algorithms.New("fixed-window", c, limit.Limit{Count: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	call, err := lim.(algorithms.Scripted).Call(srv.Key(t)+"{k}", 1, algorithms.At(time.Unix(1e9, 0)))
	if err != nil {
		t.Fatal(err)
	}
	g := callguard.New(callguard.Config{Timeout: 5 * time.Second, MaxOutage: time.Hour})
	pipe := algorithms.NewScriptPipe(c)
	// the limiter's script loaded first: a SCRIPT LOAD meets BUSY too, and
	// this test is about the call's own reply
	tr := g.Begin(ctx, 1)
	_, err = tr.Exec(pipe, []algorithms.ScriptCall{call})
	if serr := tr.End(err); err != nil || serr != nil {
		t.Fatalf("first round trip: %v (stall: %v)", err, serr)
	}
	started()
	deadline := time.Now().Add(5 * time.Second)
	for !g.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("no BUSY reply within 5s of a looping script")
		}
		tr := g.Begin(ctx, 1)
		cmds, err := tr.Exec(pipe, []algorithms.ScriptCall{call})
		if serr := tr.End(err); err != nil || serr != nil {
			t.Fatalf("round trip: %v (stall: %v): an error reply is an answer", err, serr)
		}
		_ = g.Note(cmds[0].Err())
	}
}
