package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A command's figures are the limiter's only while its Redis is the one it
// started on, with the command's keys in it: a restart
// (INFO's run_id changes: the keys and the script cache are gone), a
// FLUSHALL or FLUSHDB, an UNLINK of the command's keys by someone else make
// the limiter start from nothing mid-command, and a verify would then call
// a correct limiter VIOLATED. Such a command ends with an *EnvError.

// ErrBrokenEnv is wrapped by every *EnvError: the command's Redis changed
// under it, so no verdict and no complete result can come of it.
var ErrBrokenEnv = errors.New("the Redis changed under the command")

// EnvError says what changed in a command's Redis while it ran.
type EnvError struct {
	// Addr is the server (a Cluster node) that changed.
	Addr string
	// Restarted: its run_id changed from Before to After.
	Restarted     bool
	Before, After string
	// Vanished: the command's own marker key was gone (a FLUSHALL,
	// FLUSHDB, a restart without persistence, or someone removed it).
	Vanished bool
}

func (e *EnvError) Error() string {
	if e.Restarted {
		return fmt.Sprintf("Redis at %s restarted while the command ran (run_id %.8s… became %.8s…): the command's keys and loaded scripts were lost, so its figures are not the limiter's; run it again", e.Addr, e.Before, e.After)
	}
	return fmt.Sprintf("the command's keys were removed from Redis at %s while it ran (FLUSHALL, FLUSHDB, UNLINK or an eviction by someone else): its figures are not the limiter's; run it again", e.Addr)
}

func (e *EnvError) Unwrap() error { return ErrBrokenEnv }

// RunIDs returns the run_id (INFO server) of every server of c: the server
// itself, or every master of a Cluster, by address.
func RunIDs(ctx context.Context, c redis.UniversalClient) (map[string]string, error) {
	nodes, _, err := Nodes(ctx, c)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]string, len(nodes))
	for _, n := range nodes {
		info, err := n.Info(ctx, "server").Result()
		if err != nil {
			return nil, err
		}
		if id := InfoFields(info)["run_id"]; id != "" {
			ids[n.Options().Addr] = id
		}
	}
	return ids, nil
}

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
	ids, err := RunIDs(ctx, c)
	if err != nil && !IsRedisError(err) {
		return nil, err
	}
	e.runIDs = ids
	return e, nil
}

// Check compares the servers' run_ids with those read at the start and
// looks for the run's marker: an *EnvError when a server restarted or the
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
		if IsEnvError(err) {
			// the marker is gone: a restart (whose first look may have
			// met the dead connection) is named as such
			if r := e.restarted(ctx); IsEnvError(r) {
				return r
			}
		}
		return err
	}
	return nil
}

// restarted returns an *EnvError when a server's run_id changed since the
// start, the error of reading them, or nil.
func (e *EnvCheck) restarted(ctx context.Context) error {
	if len(e.runIDs) == 0 {
		return nil
	}
	now, err := RunIDs(ctx, e.c)
	if err != nil {
		return err
	}
	for addr, before := range e.runIDs {
		if after, ok := now[addr]; ok && after != before {
			return &EnvError{Addr: addr, Restarted: true, Before: before, After: after}
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
		return &EnvError{Addr: r.addr, Vanished: true}
	}
	return nil
}

// IsEnvError reports whether err says the command's Redis changed under it.
func IsEnvError(err error) bool { return errors.Is(err, ErrBrokenEnv) }

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
