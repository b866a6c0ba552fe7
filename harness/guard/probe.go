package guard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/server"
)

// ProbeScript tries a user's script on probe, a throwaway server ratelab
// started (server.Started; engine mode exec), before it runs on the user's Redis:
// call makes one decision of the script on the client it is given (the
// caller's limiter, built on that client), and ProbeScript makes calls of
// them, each bounded by bound (> 0), with probe's busy-reply-threshold set
// to bound so that a script still running is found within about 2*bound.
//
// A call that runs past bound is a script that loops or is slow: when it
// had written before (SCRIPT KILL answers UNKILLABLE), the same call on the
// user's Redis would leave it answering BUSY to every client until SHUTDOWN
// NOSAVE, so ProbeScript refuses it with a *field.Error naming "script"
// that wraps busy.ErrScriptUnkillable. A script that ran past bound without
// writing is killed on probe and found is busy.Killed: on the user's Redis,
// ratelab's own SCRIPT KILL would stop it, so it is not refused. Errors the
// calls return otherwise (a script error) are not ProbeScript's to judge
// and are ignored. Any other error is the probe server's (unreachable, not
// ratelab's). probe is left unusable after a refusal: close it.
func ProbeScript(ctx context.Context, probe *server.Redis, calls int, bound time.Duration, call func(ctx context.Context, c redis.UniversalClient) error) (found busy.Found, err error) {
	if !server.Started(probe) {
		return busy.NotBusy, errors.New("probe a script: not a server ratelab started (a user's script is tried only on a throwaway one)")
	}
	if bound <= 0 {
		return busy.NotBusy, fmt.Errorf("probe a script: bound must be > 0, got %s", bound)
	}
	threshold := max(bound, time.Millisecond)
	if err := probe.Client.ConfigSet(ctx, "busy-reply-threshold", strconv.FormatInt(threshold.Milliseconds(), 10)).Err(); err != nil {
		return busy.NotBusy, fmt.Errorf("probe a script: CONFIG SET busy-reply-threshold: %w", err)
	}
	for range calls {
		cctx, cancel := context.WithTimeout(ctx, bound)
		sent := time.Now()
		err := call(cctx, probe.Client)
		cancel()
		if ctx.Err() != nil {
			return busy.NotBusy, ctx.Err()
		}
		if err == nil || !server.IsTimeout(err) {
			continue
		}
		found, err := busy.Kill(ctx, probe.Client, sent, busy.Config{Threshold: threshold})
		switch {
		case err != nil:
			return found, fmt.Errorf("probe a script: %w", err)
		case found == busy.Unkillable:
			return found, field.Errorf("script", "%w: found on a throwaway redis-server in a call bounded by %s; ratelab refuses to run it on your Redis", busy.ErrScriptUnkillable, bound)
		case found == busy.Killed:
			return found, nil // it loops without writing: ratelab's SCRIPT KILL stops it
		}
	}
	return busy.NotBusy, nil
}
