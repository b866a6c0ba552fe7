package harness

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/server"
)

// Key expiry on the virtual clock (Runner.Expiry).
//
// A virtual-time run decides a day of traffic in a second of real time, so
// the TTLs the limiter gives its keys cannot run on the wall clock. Each
// decision stays one script call: the limiter's script rewritten by
// algorithms.ExpiryCall (see vclock.Rewrite), which in the
// same call, before the limiter's code, removes the tracked keys of the
// call's hash tag whose virtual deadline has passed (exactly as Redis
// removes a key: gone once now_ms > its expiry time in ms) and gives the
// others their virtual remainder as real TTL, so TTL/PTTL read virtual
// time; translates absolute expiries (EXPIREAT, PXAT, EXPIRETIME...)
// between the clocks; and after the limiter's code records, for every key
// the call touched (noted by the call itself, no SCAN) or tracked, its
// virtual deadline in the tag's companion hash "<Prefix>~vt{<key>}" (same
// hash tag, so same cluster slot); every real TTL is the virtual one plus
// a safety TTL, which keeps any stall of Redis from expiring a key early.
// No MULTI: nothing runs between the emulation and the limiter because
// they are one script. A limiter that never looks at a TTL (the built-in
// ones) gets a lean form of the same emulation, which skips what it could
// not see (vclock.ExpiryLean).
//
// Soundness: a key never vanishes earlier than Redis would remove it at
// the virtual time (a TTL set by the script counts from Redis's live
// clock, so it may end a millisecond late, never early).
//
// The safety TTL (safetyTTL) also keeps ratelab's keys from outliving a
// killed command: between calls every tracked key and companion has a real
// TTL of at most expirySafetyBase + twice the command's elapsed run + the
// window, however long the TTL the limiter gave it (the key's remainder
// comes back at the next call of its tag, before the limiter's code); never
// a key without one (no PERSIST between calls).

// expirySafetyBase is the least real TTL a tracked key keeps between calls.
const expirySafetyBase = 10 * time.Minute

// companionKey is the hash that holds the virtual deadlines of the keys of
// tag key under prefix.
func companionKey(prefix, key string) string { return prefix + "~vt{" + key + "}" }

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
			companion := companionKey(j.Prefix, k)
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

// safetyTTL is the real TTL the keys of job j keep after each call:
// expirySafetyBase, plus twice the time the runner's virtual jobs have run
// (a command still running keeps its keys however long it lasts), plus the
// job's window.
func (r *Runner) safetyTTL(j Job) time.Duration {
	return expirySafetyBase + 2*time.Since(r.expiryStart) + j.Schedule.Params.Window
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
