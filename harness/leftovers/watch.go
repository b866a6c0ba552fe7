package leftovers

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
)

// EnvCheck tells whether a command's Redis is still the one it started on.
// Its methods are safe for concurrent use.
type EnvCheck struct {
	c      redis.UniversalClient
	runIDs map[string]string
	reg    *Registration
}

// NewEnvCheck returns the check of c: its servers' run_ids are those reg
// read when the run registered, or (reg nil) those read now; with reg, its
// marker is looked for too. Errors: INFO failed (a user refused INFO gets
// a check of the marker alone).
func NewEnvCheck(ctx context.Context, c redis.UniversalClient, reg *Registration) (*EnvCheck, error) {
	e := &EnvCheck{c: c, reg: reg}
	if reg != nil {
		e.runIDs = reg.runIDs
		return e, nil
	}
	ids, err := server.RunIDs(ctx, c)
	if err != nil && !server.IsRedisError(err) {
		return nil, err
	}
	e.runIDs = ids
	return e, nil
}

// Check compares the servers' run_ids with those read at the start and
// looks for the run's marker: an *server.EnvError when a server restarted or the
// marker vanished (now, or at a heartbeat since). Errors reading them are
// returned as they are (the command's own calls meet the same outage and
// say so). A nil EnvCheck checks nothing.
func (e *EnvCheck) Check(ctx context.Context) error {
	if e == nil {
		return nil
	}
	if err := e.restarted(ctx); err != nil {
		return err
	}
	if e.reg != nil {
		err := e.reg.check(ctx)
		if server.IsEnvError(err) {
			// the marker is gone: a restart (whose first look may have
			// met the dead connection) is named as such
			if r := e.restarted(ctx); server.IsEnvError(r) {
				return r
			}
		}
		return err
	}
	return nil
}

// restarted returns an *server.EnvError when a server's run_id changed since the
// start, the error of reading them, or nil.
func (e *EnvCheck) restarted(ctx context.Context) error {
	if len(e.runIDs) == 0 {
		return nil
	}
	now, err := server.RunIDs(ctx, e.c)
	if err != nil {
		return err
	}
	for addr, before := range e.runIDs {
		if after, ok := now[addr]; ok && after != before {
			return &server.EnvError{Addr: addr, Restarted: true, Before: before, After: after}
		}
	}
	return nil
}

// check looks for the run's marker, unless the run stopped its
// registration (it removes its own keys, the marker last).
func (r *Registration) check(ctx context.Context) error {
	select {
	case <-r.stop:
		return nil
	default:
	}
	n, err := r.c.Exists(ctx, r.marker).Result()
	if err != nil {
		return err
	}
	if r.vanished.Load() || n == 0 && r.missing(ctx) {
		return &server.EnvError{Addr: r.addr, Vanished: true}
	}
	return nil
}

// addrOf is c's address for messages: the server's, or a Cluster's seeds.
func addrOf(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	return "?"
}

// DefaultEnvEvery is how often Watch looks when a WatchConfig leaves Every
// zero.
const DefaultEnvEvery = 200 * time.Millisecond

// WatchConfig holds Watch's timings. Every is the time between two looks
// (zero: DefaultEnvEvery; a look gets 5*Every to be answered); Last bounds
// the look stop takes when the command ended by itself (zero: 5 s), or
// 2*Every when the previous look got no answer (a Redis that hangs is not
// waited for long again).
type WatchConfig struct {
	Every, Last time.Duration
}

// Watch checks e every cfg.Every until stop or until ctx ends, and calls
// fire, from its own goroutine, with the *server.EnvError of a change (once,
// then it stops watching). Errors of a look are not fired: the command's
// own calls meet the same outage. stop ends the watch and, when ctx is
// still live (the command ended by itself), checks once more within
// cfg.Last: a change since the last look is fired then. Safe to call stop
// twice.
func (e *EnvCheck) Watch(ctx context.Context, cfg WatchConfig, fire func(error)) (stop func()) {
	every := cfg.Every
	if every <= 0 {
		every = DefaultEnvEvery
	}
	last := cfg.Last
	if last <= 0 {
		last = 5 * time.Second
	}
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var unanswered bool // the last look failed (read after done is closed)
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			cctx, cancel := context.WithTimeout(wctx, 5*every)
			err := e.Check(cctx)
			cancel()
			if server.IsEnvError(err) {
				fire(err)
				return
			}
			unanswered = err != nil && wctx.Err() == nil
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			wcancel()
			<-done
			if ctx.Err() != nil {
				return // stopped by a cause of its own (Ctrl-C, an eviction, a change)
			}
			bound := last
			if unanswered {
				bound = 2 * every
			}
			cctx, cancel := server.CleanupContext(ctx, bound)
			defer cancel()
			if err := e.Check(cctx); server.IsEnvError(err) {
				fire(err)
			}
		})
	}
}
