package harness

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/vclock"
)

// Key expiry on the virtual clock (Runner.Expiry): each decision stays one
// script call, the limiter's script rewritten by algorithms.ExpiryCall
// (vclock.Rewrite with Options.Expiry; a limiter that never looks at a TTL,
// as the built-ins, gets the lean form), with the companion hash of the
// arrival's key (vclock.CompanionKey) and the safety TTL of the round trip
// (vclock.SafetyTTL, counted from the runner's first virtual job). No
// MULTI: nothing runs between the emulation and the limiter because they
// are one script.

// dropKeys removes job j's keys (Runner.DropKeys): for each arrival key
// named there, its limiter key Prefix + "{" + key + "}", every key its
// expiry companion records (the full rewrite records every key the calls
// touched under the tag; the lean one, the keys given a TTL) and the
// companion. The keys are read from the companions, never found by
// SCAN, so the time it takes does not grow with the keyspace (a SCAN per
// job made fixed-window's verify 2-4x slower on a Redis holding 100,000
// unrelated keys). Nothing when ctx is done: the run's own cleanup removes
// them.
func (r *Runner) dropKeys(ctx context.Context, j Job) {
	if r.Redis == nil || len(r.DropKeys) == 0 || ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.cleanupTimeout())
	defer cancel()
	keys := make([]string, 0, 2*len(r.DropKeys))
	recorded := make([]*redis.StringSliceCmd, len(r.DropKeys))
	if _, err := r.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range r.DropKeys {
			companion := vclock.CompanionKey(j.Prefix, k)
			keys = append(keys, j.Prefix+"{"+k+"}", companion)
			recorded[i] = p.HKeys(ctx, companion)
		}
		return nil
	}); err != nil {
		return
	}
	for _, c := range recorded {
		for _, key := range c.Val() {
			if strings.HasPrefix(key, j.Prefix+"{") { // the companion's placeholder field is ""
				keys = append(keys, key)
			}
		}
	}
	_ = server.DeleteKeys(ctx, r.Redis, keys) // what stays is the run's cleanup's
}

// safetyTTL is the safety TTL of job j's calls now (vclock.SafetyTTL):
// counted from the runner's first virtual job, with the job's window.
func (r *Runner) safetyTTL(j Job) time.Duration {
	return vclock.SafetyTTL(time.Since(r.expiryStart), j.Limit.Window)
}

// expiryCall writes c, job j's call at virtual time vnow, rewritten to
// emulate key expiry on the keys of its tag (tag.Rewrite: tag from the
// arrival's runKey) over *dst. An error (a script whose source ratelab does
// not know) is a *custom.ScriptError: every call would fail alike.
func expiryCall(dst *algorithms.ScriptCall, c algorithms.ScriptCall, tag algorithms.ExpiryTag, vnow time.Time, safety time.Duration) error {
	if err := tag.Rewrite(dst, c, vnow, safety); err != nil {
		return &custom.ScriptError{Err: err}
	}
	return nil
}
