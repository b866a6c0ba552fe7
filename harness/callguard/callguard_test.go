package callguard_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/callguard"
)

// clock is a Guard's clock on given instants: it moves only when told.
type clock struct{ t time.Time }

func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// reply is an error reply from Redis (go-redis's redis.Error).
type reply string

func (e reply) Error() string { return string(e) }
func (reply) RedisError()     {}

const busyReply = reply("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")

// trip runs one round trip of n calls on g that takes d on c and ends
// with err; it returns what End returned and the closed trip.
func trip(g *callguard.Guard, c *clock, n int, d time.Duration, err error) (error, callguard.Trip) {
	t := g.Begin(context.Background(), n)
	c.advance(d)
	return t.End(err), t
}

// The bound of a round trip: Timeout per PerTimeout calls, raised by
// Adapt to the floor and to Factor times the typical round trip.
func TestBound(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		cfg  callguard.Config
		seen []time.Duration // successful round trips before
		n    int
		want time.Duration
	}{
		{"no timeout: no bound", callguard.Config{}, nil, 1, 0},
		{"one call: the timeout", callguard.Config{Timeout: 500 * ms}, nil, 1, 500 * ms},
		{"no calls count as one", callguard.Config{Timeout: 500 * ms, PerTimeout: 16}, nil, 0, 500 * ms},
		{"16 calls in one timeout", callguard.Config{Timeout: 500 * ms, PerTimeout: 16}, nil, 16, 500 * ms},
		{"the 17th call adds a timeout", callguard.Config{Timeout: 500 * ms, PerTimeout: 16}, nil, 17, time.Second},
		{"a replay's 256 calls at 64 per timeout", callguard.Config{Timeout: 500 * ms, PerTimeout: 64}, nil, 256, 2 * time.Second},
		{"slow round trips without Adapt change nothing", callguard.Config{Timeout: 500 * ms}, []time.Duration{time.Second}, 1, 500 * ms},
		{"Adapt with nothing seen: the floor", callguard.Config{Timeout: 500 * ms, Adapt: true}, nil, 1, callguard.DefaultFloor},
		{"Adapt with fast round trips: the floor", callguard.Config{Timeout: 500 * ms, Adapt: true}, []time.Duration{ms}, 1, 2 * time.Second},
		{"Adapt: 50 times the typical round trip", callguard.Config{Timeout: 500 * ms, Adapt: true}, []time.Duration{100 * ms}, 1, 5 * time.Second},
		{"Adapt: a timeout above both stays", callguard.Config{Timeout: 3 * time.Second, Adapt: true}, []time.Duration{10 * ms}, 1, 3 * time.Second},
		{"Adapt without a timeout: no bound", callguard.Config{Adapt: true}, []time.Duration{100 * ms}, 1, 0},
		{"Adapt: Floor and Factor given", callguard.Config{Timeout: 100 * ms, Adapt: true, Floor: time.Second, Factor: 10}, []time.Duration{200 * ms}, 1, 2 * time.Second},
		{"Adapt: Floor given", callguard.Config{Timeout: 100 * ms, Adapt: true, Floor: 300 * ms}, nil, 1, 300 * ms},
	} {
		c := newClock()
		tc.cfg.Now = c.now
		g := callguard.New(tc.cfg)
		for _, d := range tc.seen {
			trip(g, c, 1, d, nil)
		}
		if got := g.Bound(tc.n); got != tc.want {
			t.Errorf("%s: Bound(%d) = %s, want %s", tc.name, tc.n, got, tc.want)
		}
	}
}

// The typical round trip is the first one seen, then a moving average in
// which each new one weighs 1/16; failed round trips do not count.
func TestTypical(t *testing.T) {
	ms := time.Millisecond
	c := newClock()
	g := callguard.New(callguard.Config{Now: c.now})
	for i, step := range []struct {
		d    time.Duration
		err  error
		want time.Duration
	}{
		{0, nil, 0}, // nothing seen yet (a zero round trip is the first seen)
		{160 * ms, nil, 160 * ms},
		{320 * ms, nil, 170 * ms},            // 160 + (320-160)/16
		{10 * time.Second, io.EOF, 170 * ms}, // a failure: not a round trip
		{170 * ms, nil, 170 * ms},
	} {
		trip(g, c, 1, step.d, step.err)
		if got := g.Typical(); got != step.want {
			t.Errorf("step %d: Typical() = %s, want %s", i, got, step.want)
		}
	}
}

// A round trip past its bound is a stall in virtual time (Stall), and
// only a timed-out call in real time; other failures and slow successes
// are neither.
func TestStall(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		cfg      callguard.Config
		waited   time.Duration
		err      error
		stall    time.Duration // the StallError's Bound; zero: no StallError
		timedOut bool
	}{
		{"past the bound: a stall", callguard.Config{Timeout: 500 * ms, Stall: true}, 600 * ms, context.DeadlineExceeded, 500 * ms, true},
		{"the client's read timeout first: waited that long", callguard.Config{Timeout: 500 * ms, Stall: true}, 300 * ms, os.ErrDeadlineExceeded, 300 * ms, true},
		{"a wrapped timeout", callguard.Config{Timeout: 500 * ms, Stall: true}, 500 * ms, errors.Join(errors.New("sliding-log"), context.DeadlineExceeded), 500 * ms, true},
		{"the adapted bound", callguard.Config{Timeout: 500 * ms, Stall: true, Adapt: true}, 2500 * ms, context.DeadlineExceeded, 2 * time.Second, true},
		{"real time: a failed call, not a stall", callguard.Config{Timeout: 500 * ms}, 600 * ms, context.DeadlineExceeded, 0, true},
		{"no bound: the client's timeout is no stall", callguard.Config{Stall: true}, 3 * time.Second, os.ErrDeadlineExceeded, 0, false},
		{"a closed connection is no stall", callguard.Config{Timeout: 500 * ms, Stall: true}, 10 * ms, io.EOF, 0, false},
		{"an error reply is no stall", callguard.Config{Timeout: 500 * ms, Stall: true}, 10 * ms, busyReply, 0, false},
		{"a slow success is waited for", callguard.Config{Timeout: 500 * ms, Stall: true}, 10 * time.Second, nil, 0, false},
	} {
		c := newClock()
		tc.cfg.Now = c.now
		g := callguard.New(tc.cfg)
		err, tr := trip(g, c, 1, tc.waited, tc.err)
		if tr.TimedOut != tc.timedOut {
			t.Errorf("%s: TimedOut = %v, want %v", tc.name, tr.TimedOut, tc.timedOut)
		}
		if tr.Recv.Sub(tr.Sent) != tc.waited {
			t.Errorf("%s: Recv - Sent = %s, want %s", tc.name, tr.Recv.Sub(tr.Sent), tc.waited)
		}
		var se *callguard.StallError
		switch {
		case tc.stall == 0 && err != nil:
			t.Errorf("%s: End = %v, want nil", tc.name, err)
		case tc.stall == 0:
		case !errors.As(err, &se):
			t.Errorf("%s: End = %v, want a *StallError", tc.name, err)
		case se.Bound != tc.stall || !errors.Is(err, tc.err):
			t.Errorf("%s: StallError{Bound: %s, Err: %v}, want Bound %s wrapping %v", tc.name, se.Bound, se.Err, tc.stall, tc.err)
		}
	}
	e := &callguard.StallError{Bound: 2 * time.Second, Err: context.DeadlineExceeded}
	if want := "Redis did not answer a call within 2s (stopped, swapping or hung)"; !strings.HasPrefix(e.Error(), want) {
		t.Errorf("StallError: %q, want it to start %q", e.Error(), want)
	}
}

// A round trip's context carries its bound; without one it is the
// caller's own.
func TestTripContext(t *testing.T) {
	g := callguard.New(callguard.Config{Timeout: time.Hour})
	tr := g.Begin(context.Background(), 1)
	dl, ok := tr.Ctx.Deadline()
	if !ok || time.Until(dl) < 59*time.Minute {
		t.Errorf("bounded trip: deadline %v %v, want about an hour from now", dl, ok)
	}
	_ = tr.End(nil)
	if tr.Ctx.Err() == nil {
		t.Error("End left the trip's context running")
	}
	parent := context.Background()
	if tr := callguard.New(callguard.Config{}).Begin(parent, 1); tr.Ctx != parent || tr.Bound != 0 {
		t.Errorf("unbounded trip: Ctx %v Bound %s, want the caller's context and no bound", tr.Ctx, tr.Bound)
	}
}

// Calls that keep failing for MaxOutage stop the run; a Redis that answers
// again sooner (a restart) only costs the calls that failed.
func TestOutage(t *testing.T) {
	s := time.Second
	type step struct {
		after time.Duration // since the step before
		err   error
		want  string // the error Note returns; "": none
	}
	for _, tc := range []struct {
		name      string
		maxOutage time.Duration
		steps     []step
	}{
		{"shorter than the bound", 2 * s, []step{
			{0, io.EOF, ""}, {1900 * time.Millisecond, io.EOF, ""}, {0, nil, ""},
		}},
		{"a restart: the outage starts again", 2 * s, []step{
			{0, io.EOF, ""}, {1500 * time.Millisecond, io.EOF, ""}, {100 * time.Millisecond, nil, ""},
			{100 * time.Millisecond, io.EOF, ""}, {1500 * time.Millisecond, io.EOF, ""},
		}},
		{"as long as the bound", 2 * s, []step{
			{0, io.EOF, ""}, {s, io.EOF, ""},
			{s, io.EOF, "Redis kept failing for 2s (last error: EOF)"},
			{500 * time.Millisecond, io.ErrUnexpectedEOF, "Redis kept failing for 2.5s (last error: unexpected EOF)"},
		}},
		{"longer than the bound at the second failure", 2 * s, []step{
			{0, io.EOF, ""}, {3 * s, context.DeadlineExceeded, "Redis kept failing for 3s (last error: context deadline exceeded)"},
		}},
		{"BUSY replies count", time.Second, []step{
			{0, busyReply, ""}, {s, busyReply, "Redis kept failing for 1s (last error: BUSY Redis is busy"},
		}},
		{"no bound: never", 0, []step{
			{0, io.EOF, ""}, {time.Hour, io.EOF, ""},
		}},
	} {
		c := newClock()
		g := callguard.New(callguard.Config{MaxOutage: tc.maxOutage, Now: c.now})
		for i, st := range tc.steps {
			c.advance(st.after)
			err := g.Note(st.err)
			switch {
			case st.want == "" && err != nil:
				t.Errorf("%s: step %d: Note(%v) = %v, want nil", tc.name, i, st.err, err)
			case st.want == "":
			case err == nil || !strings.HasPrefix(err.Error(), st.want) || !errors.Is(err, callguard.ErrOutage):
				t.Errorf("%s: step %d: Note(%v) = %v, want %q wrapping ErrOutage", tc.name, i, st.err, err, st.want)
			}
		}
	}
}

// A call answered BUSY (another client's script past the server's
// busy-reply-threshold) is noted; other answers and failures are not.
func TestBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		errs []error
		want bool
	}{
		{"successes", []error{nil, nil}, false},
		{"failures", []error{io.EOF, context.DeadlineExceeded}, false},
		{"another error reply", []error{reply("OOM command not allowed when used memory > 'maxmemory'.")}, false},
		{"a BUSY reply", []error{nil, busyReply, nil}, true},
		{"a wrapped BUSY reply", []error{errors.Join(errors.New("sliding-log"), busyReply)}, true},
		{"BUSY without its space", []error{reply("BUSYGROUP Consumer Group name already exists")}, false},
	} {
		g := callguard.New(callguard.Config{})
		for _, err := range tc.errs {
			_ = g.Note(err)
		}
		if got := g.Busy(); got != tc.want {
			t.Errorf("%s: Busy() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
