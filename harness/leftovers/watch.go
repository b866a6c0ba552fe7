package leftovers

import (
	"context"
	"strings"

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
