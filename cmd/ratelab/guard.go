package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/targets"
)

// guard protects the user's Redis from the user's --script (guard.Open),
// unless --trust-script; viaLimiter says whether the command sends the
// scripts' calls through the limiter (run, verify). It returns the Redis
// the command must use from then on and a func that removes the ACL user.
// Errors are usage errors naming the flag.
func (t *targetFlags) guard(ctx context.Context, rd *server.Redis, runID string, viaLimiter bool, stderr io.Writer) (*server.Redis, func(), error) {
	rd, g, mode, err := guard.Open(ctx, rd, t.specs, runID, t.trust, viaLimiter, stderr)
	var refused *guard.RefusedError
	var se *targets.SpecError
	switch name, _ := field.Name(err); {
	case errors.As(err, &refused):
		return nil, nil, usagef("--script %s: %w", refused.Name, errors.Unwrap(refused.Err))
	case errors.As(err, &se):
		return nil, nil, flagError(nil, se.Err)
	case name == "script":
		return nil, nil, usagef("%w; run it against a throwaway Redis (--redis exec) or pass --trust-script", flagError(nil, err))
	case err != nil:
		return nil, nil, flagError(nil, err)
	case mode == guard.Trusted:
		fmt.Fprintln(stderr, "ratelab: --trust-script: your script runs with your connection's rights on your Redis")
	case mode == guard.Guarded:
		fmt.Fprintln(stderr, "ratelab: your script runs as a temporary ACL user that may touch only this run's keys (--trust-script to lift it)")
	}
	if g != nil {
		t.guarded = *g
	}
	return rd, t.guarded.Close, nil
}
