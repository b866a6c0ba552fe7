package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/targets"
)

// guard protects the user's Redis from the user's --script (issue 14,
// server.GuardScript): on a Redis ratelab did not start, the scripts'
// calls run as a temporary ACL user, unless --trust-script. viaLimiter
// says whether the command sends the scripts' calls through the limiter
// (run, verify). It returns the Redis the command must use from then on
// (rd, or rd seen through the guard, so that pipelined calls are guarded
// too) and a func that removes the ACL user.
func (t *targetFlags) guard(ctx context.Context, rd *server.Redis, runID string, viaLimiter bool, stderr io.Writer) (*server.Redis, func(), error) {
	nothing := func() {}
	if !targets.HasScript(t.specs) || rd == nil {
		return rd, nothing, nil
	}
	g, err := server.GuardScript(ctx, rd, runID, t.trust, viaLimiter)
	switch name, _ := field.Name(err); {
	case name == "script":
		return nil, nothing, usagef("%w; run it against a throwaway Redis (--redis exec) or pass --trust-script", flagError(nil, err))
	case err != nil:
		return nil, nothing, flagError(nil, err)
	case g == nil && t.trust && !server.Started(rd):
		fmt.Fprintln(stderr, "ratelab: --trust-script: your script runs with your connection's rights on your Redis")
	case g != nil:
		t.guarded = g.Client
		fmt.Fprintln(stderr, "ratelab: your script runs as a temporary ACL user that may touch only this run's keys (--trust-script to lift it)")
		unguard := func() {
			if err := g.Close(ctx); err != nil {
				fmt.Fprintf(stderr, "ratelab: the script's temporary ACL user may be left on your Redis: %v\n", err)
			}
		}
		return g.Redis(rd), unguard, nil
	}
	return rd, nothing, nil
}
