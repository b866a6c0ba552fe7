package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ratelab/ratelab/harness/server"
)

// ownRedis are the engines whose Redis ratelab started itself: a script
// can harm nothing there.
var ownRedis = map[string]bool{"exec": true, "container": true, "cluster": true}

// guard protects the user's Redis from the user's --script (issue 14):
// on a Redis ratelab did not start, the scripts' calls run as a temporary
// ACL user that may touch only this run's keys and run no dangerous
// command (server.Guard), unless --trust-script. viaLimiter says whether
// the command sends the scripts' calls through the limiter (run, verify);
// capacity and bench pipeline them on their own connections, so there the
// guard is a refusal unless --trust-script. It returns the Redis the
// command must use from then on (rd, or rd seen through the guard, so that
// pipelined calls are guarded too) and a func that removes the ACL user.
func (t *targetFlags) guard(ctx context.Context, rd *server.Redis, runID string, viaLimiter bool, stderr io.Writer) (*server.Redis, func(), error) {
	nothing := func() {}
	if !t.hasScript() || rd == nil || ownRedis[rd.Info.Mode] {
		return rd, nothing, nil
	}
	if t.trust {
		fmt.Fprintln(stderr, "ratelab: --trust-script: your script runs with your connection's rights on your Redis")
		return rd, nothing, nil
	}
	if !viaLimiter {
		return nil, nothing, usagef("--script: on your own Redis a script could touch keys that are not ratelab's (FLUSHALL, other keys), and this command cannot guard it; run it against a throwaway Redis (--redis exec) or pass --trust-script")
	}
	g, err := server.NewGuard(ctx, rd, server.KeyPrefix+runID+":")
	if errors.Is(err, server.ErrNoGuard) {
		return nil, nothing, usagef("--script: %v; run it against a throwaway Redis (--redis exec) or pass --trust-script", err)
	}
	if err != nil {
		return nil, nothing, usagef("--redis: %w", err)
	}
	t.guarded = g.Client
	fmt.Fprintln(stderr, "ratelab: your script runs as a temporary ACL user that may touch only this run's keys (--trust-script to lift it)")
	unguard := func() {
		if err := g.Close(ctx); err != nil {
			fmt.Fprintf(stderr, "ratelab: the script's temporary ACL user may be left on your Redis: %v\n", err)
		}
	}
	return g.Redis(rd), unguard, nil
}

// hasScript reports whether any target is a user's script.
func (t *targetFlags) hasScript() bool {
	for _, s := range t.specs {
		if s.Script != "" {
			return true
		}
	}
	return false
}
