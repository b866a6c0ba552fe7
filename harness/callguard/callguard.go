// Package callguard guards the calls a study sends to Redis: it bounds
// each round trip (by a fixed timeout, or one that grows with the round
// trips seen), tells a stall (a Redis that stopped answering) from a slow
// call, stops a run whose calls keep failing for longer than an outage
// bound, notes BUSY replies (another client's script holding the server),
// and loads scripts before their first call and counts the NOSCRIPT
// reloads a flushed script cache forces.
//
// One Guard serves one run: harness.Runner's calls (one at a time or
// pipelined), a replay's pipelines, capacity's fills. Its clock is
// Config.Now, so its rules are tested on given instants.
package callguard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/server"
)

// DefaultFloor and DefaultFactor shape the adapted bound (Config.Adapt)
// when Config.Floor and Config.Factor are zero.
const (
	DefaultFloor  = 2 * time.Second
	DefaultFactor = 50
)

// averageWeight is the weight, 1/averageWeight, of each new round trip in
// the moving average: one stall does not raise it much.
const averageWeight = 16

// Config is what a Guard bounds. The zero Config bounds nothing: no
// timeout, no outage bound; the Guard then only counts, loads scripts and
// notes BUSY.
type Config struct {
	// Timeout bounds a round trip of up to PerTimeout calls: one of n
	// calls gets Timeout x ceil(n/PerTimeout). Zero: no bound beyond the
	// client's own timeouts.
	Timeout time.Duration
	// PerTimeout is how many calls of a round trip one Timeout covers;
	// zero means one.
	PerTimeout int
	// Stall makes a round trip that ran past its bound a stall: Trip.End
	// returns a *StallError, which stops the run (virtual time, where a
	// slow call changes no decision and a hang yields no figures). Off, a
	// call past its bound is only a failed call (real time).
	Stall bool
	// Adapt makes Timeout a floor (when Timeout > 0): the bound is at
	// least Floor and Factor times the moving average (weight 1/16) of the
	// successful round trips seen, so a slow machine is waited for.
	Adapt bool
	// Floor is the least adapted bound; zero means DefaultFloor (2 s).
	Floor time.Duration
	// Factor multiplies the average round trip in the adapted bound; zero
	// means DefaultFactor (50).
	Factor int
	// MaxOutage is how long calls may keep failing before Note returns an
	// error wrapping ErrOutage (a Redis that is gone; one that comes back
	// sooner, a restart, only costs the calls that failed). Zero: never.
	MaxOutage time.Duration
	// Now is the Guard's clock (send and receive times, outage lengths);
	// nil means time.Now.
	Now func() time.Time
}

// Guard applies a Config to the calls of one run. Its methods are safe for
// concurrent use; a Trip is its caller's.
type Guard struct {
	cfg     Config
	typical atomic.Int64 // the moving average of successful round trips, ns
	busy    atomic.Bool  // a call was answered BUSY
	reloads atomic.Int64 // NOSCRIPT reloads of Trip.Exec
	loaded  sync.Map     // SHA1 -> true: scripts Load sent
	outage  struct {
		mu    sync.Mutex
		since time.Time // first failure of the failures under way; zero: none
		// failing says since is set: a success reads it alone, so round
		// trips that succeed (of many workers at once) take no lock
		failing atomic.Bool
	}
}

// New returns a Guard applying cfg, its zero fields given their defaults.
func New(cfg Config) *Guard {
	cfg.PerTimeout = max(cfg.PerTimeout, 1)
	if cfg.Floor <= 0 {
		cfg.Floor = DefaultFloor
	}
	if cfg.Factor <= 0 {
		cfg.Factor = DefaultFactor
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Guard{cfg: cfg}
}

// Bound is the bound of a round trip of n calls after the round trips seen
// so far: Timeout per PerTimeout calls, raised with Adapt to Floor and
// Factor times the typical round trip. Zero: no bound.
func (g *Guard) Bound(n int) time.Duration {
	k := time.Duration((max(n, 1) + g.cfg.PerTimeout - 1) / g.cfg.PerTimeout)
	b := g.cfg.Timeout * k
	if g.cfg.Adapt && g.cfg.Timeout > 0 {
		b = max(b, g.cfg.Floor, time.Duration(g.cfg.Factor)*g.Typical())
	}
	return b
}

// Typical is the moving average of the successful round trips seen (the
// first one, then each new one weighing 1/16); zero before any.
func (g *Guard) Typical() time.Duration { return time.Duration(g.typical.Load()) }

// noteRoundTrip folds a successful round trip into the typical one.
func (g *Guard) noteRoundTrip(d time.Duration) {
	for {
		old := g.typical.Load()
		next := old + (int64(d)-old)/averageWeight
		if old == 0 {
			next = int64(d)
		}
		if g.typical.CompareAndSwap(old, next) {
			return
		}
	}
}

// Trip is one round trip under way: Begin starts it, End closes it.
type Trip struct {
	// Ctx is the caller's context bounded by Bound: send the round trip
	// with it.
	Ctx context.Context
	// Bound is the round trip's bound; zero: none.
	Bound time.Duration
	// Sent is when the round trip began, on the Guard's clock; Recv, set
	// by End, when it ended.
	Sent, Recv time.Time
	// TimedOut, set by End, says the round trip failed by running past
	// Bound: a script it sent may still be running on the server.
	TimedOut bool

	g      *Guard
	cancel context.CancelFunc
}

// Begin starts a round trip of n calls under ctx.
func (g *Guard) Begin(ctx context.Context, n int) Trip {
	t := Trip{Ctx: ctx, Bound: g.Bound(n), g: g}
	if t.Bound > 0 {
		t.Ctx, t.cancel = context.WithTimeout(ctx, t.Bound)
	}
	t.Sent = g.cfg.Now()
	return t
}

// Exec sends calls through pipe as t's round trip (with t.Ctx). Calls
// refused with NOSCRIPT (the script cache was flushed) did not run: the
// pipe loads their scripts and resends them, and the Guard counts the
// reloads (Reloads). The commands and the error are pipe.Exec's.
func (t *Trip) Exec(pipe *algorithms.ScriptPipe, calls []algorithms.ScriptCall) ([]*redis.Cmd, error) {
	loads := pipe.Loads
	cmds, err := pipe.Exec(t.Ctx, calls)
	t.g.reloads.Add(int64(pipe.Loads - loads))
	return cmds, err
}

// End closes t with the round trip's error (nil: it was answered, error
// replies included), sets Recv and TimedOut and folds a success into the
// typical round trip. With Config.Stall, a round trip that ran past its
// bound returns a *StallError (the run must stop); otherwise nil.
func (t *Trip) End(err error) error {
	if t.cancel != nil {
		t.cancel()
	}
	t.Recv = t.g.cfg.Now()
	waited := t.Recv.Sub(t.Sent)
	if err == nil {
		t.g.noteRoundTrip(waited)
		return nil
	}
	t.TimedOut = t.Bound > 0 && server.IsTimeout(err)
	if t.TimedOut && t.g.cfg.Stall {
		return &StallError{Bound: min(t.Bound, waited), Err: err}
	}
	return nil
}

// Note folds a call's result into the outage under way: nil is a success
// and ends it; an error (a BUSY reply is also noted: Busy) extends it.
// Once failures have lasted MaxOutage it returns an error wrapping
// ErrOutage, saying how long and the last error (again on every failure
// after); nil otherwise. Which errors count is the caller's choice.
func (g *Guard) Note(err error) error {
	if busy.IsReply(err) {
		g.busy.Store(true)
	}
	if g.cfg.MaxOutage <= 0 || err == nil && !g.outage.failing.Load() {
		return nil
	}
	g.outage.mu.Lock()
	defer g.outage.mu.Unlock()
	if err == nil {
		g.outage.since = time.Time{}
		g.outage.failing.Store(false)
		return nil
	}
	now := g.cfg.Now()
	if g.outage.since.IsZero() {
		g.outage.since = now
		g.outage.failing.Store(true)
		return nil
	}
	if d := now.Sub(g.outage.since); d >= g.cfg.MaxOutage {
		return fmt.Errorf("%w for %s (last error: %v)", ErrOutage, d.Round(time.Millisecond), err)
	}
	return nil
}

// Busy reports whether a call Note was given was answered BUSY: a script
// ran past the server's busy-reply-threshold.
func (g *Guard) Busy() bool { return g.busy.Load() }

// Reloads is how many times Trip.Exec met NOSCRIPT and loaded scripts
// again (a SCRIPT FLUSH or a failover during the run).
func (g *Guard) Reloads() int64 { return g.reloads.Load() }

// Load makes sure the server holds the script of every call, with SCRIPT
// LOAD of those this Guard has not loaded yet, so that a run's first
// round trip meets no NOSCRIPT (a flush later is Trip.Exec's to mend).
// The error names SCRIPT LOAD. A call of a function (FCALL) needs no
// load: its library was loaded before the run.
func (g *Guard) Load(ctx context.Context, rdb redis.Scripter, calls []algorithms.ScriptCall) error {
	for _, c := range calls {
		s := c.Script
		if s == nil {
			continue
		}
		if _, ok := g.loaded.Load(s.Hash()); ok {
			continue
		}
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
		g.loaded.Store(s.Hash(), true)
	}
	return nil
}

// ErrOutage is the cause of a run stopped because Redis kept failing for
// longer than Config.MaxOutage.
//
//lint:ignore ST1005 Redis is a proper noun, and the README and the CLI's tests quote this message
var ErrOutage = errors.New("Redis kept failing")

// StallError stops a virtual-time command whose Redis did not answer a
// call within its bound: stopped (SIGSTOP), swapping, or hung. Its calls
// are not counted as decisions.
type StallError struct {
	// Bound is how long the call was waited for: its bound, or the
	// client's read timeout when that came first.
	Bound time.Duration
	// Err is the call's own error (an i/o timeout).
	Err error
}

func (e *StallError) Error() string {
	return fmt.Sprintf("Redis did not answer a call within %s (stopped, swapping or hung): a virtual-time command waits for slow calls but not for this long (--timeout sets the bound); no figures from a stalled run", e.Bound.Round(time.Millisecond))
}

func (e *StallError) Unwrap() error { return e.Err }
