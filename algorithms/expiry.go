package algorithms

import (
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/vclock"
)

// scriptSource is what a registered script was made from.
type scriptSource struct {
	src      string // the original source
	withTime bool   // the script is src rewritten by WithVirtualTime
	once     sync.Once
	expiry   *redis.Script
	err      error
}

// sources maps a registered script's SHA1 to its *scriptSource.
var sources sync.Map

// registerScript records that s runs src (withTime: src rewritten by
// vclock.Rewrite), so that ExpiryCall can rewrite calls of s.
func registerScript(s *redis.Script, src string, withTime bool) *redis.Script {
	sources.LoadOrStore(s.Hash(), &scriptSource{src: src, withTime: withTime})
	return s
}

// newScript is redis.NewScript, registered for ExpiryCall.
func newScript(src string) *redis.Script { return registerScript(redis.NewScript(src), src, false) }

// ExpiryCall returns c rewritten to emulate key expiry at virtual time now
// in the same call (see vclock.Rewrite): its script rewritten, the
// companion hash appended to its keys and tracked (the prefix of the keys
// to track: the call's tagged key), now (in ms) and safety (the real TTL
// every tracked key and the companion keep after the call, rounded down to
// the ms; at least 1 ms) appended to its arguments. c's own slices are not
// changed. The companion must hash to the slot of c's keys (same hash tag).
// Errors: c's script was not made by this package (a limiter of another
// package: only scripts of the algorithms and ScriptLimiter are known), or
// its source cannot be rewritten (a function library). Safe for concurrent
// use; each script is rewritten once.
func ExpiryCall(c ScriptCall, tracked, companion string, now time.Time, safety time.Duration) (ScriptCall, error) {
	var out ScriptCall
	if err := NewExpiryTag(tracked, companion).Rewrite(&out, c, now, safety); err != nil {
		return ScriptCall{}, err
	}
	return out, nil
}

// ExpiryTag is what ExpiryCall appends for one hash tag: the tracked
// prefix and the companion hash, boxed as a call argument once, so that the
// calls of one tag rewritten by Rewrite allocate neither again. The zero
// ExpiryTag tracks "" (every key) with the companion "": build one with
// NewExpiryTag. Safe for concurrent use (it is never changed).
type ExpiryTag struct {
	tracked   any // the tracked prefix, a string
	companion string
}

// NewExpiryTag returns the ExpiryTag of tracked (the prefix of the keys to
// track) and companion (the hash of their virtual deadlines), as
// ExpiryCall takes them.
func NewExpiryTag(tracked, companion string) ExpiryTag {
	return ExpiryTag{tracked: tracked, companion: companion}
}

// Rewrite writes c rewritten as ExpiryCall rewrites it (t's tracked
// prefix and companion, now and safety) over *dst: dst's Keys and Args are
// reused (overwritten from index 0, grown when too short), so a caller that
// keeps dst from one call to the next allocates only the boxed now and
// safety. c's slices are only read; they must not be dst's own. Errors as
// ExpiryCall's (dst is then left as it was).
func (t ExpiryTag) Rewrite(dst *ScriptCall, c ScriptCall, now time.Time, safety time.Duration) error {
	v, ok := sources.Load(c.Script.Hash())
	if !ok {
		return fmt.Errorf("virtual key expiry: script %s is not one of ratelab's (its source is unknown)", c.Script.Hash())
	}
	ss := v.(*scriptSource)
	ss.once.Do(func() {
		vt, err := vclock.Rewrite(ss.src, vclock.Options{Time: ss.withTime, Expiry: vclock.ExpiryLean})
		if err != nil {
			ss.err = fmt.Errorf("virtual key expiry: %w", err)
			return
		}
		ss.expiry = redis.NewScript(vt.Source)
	})
	if ss.err != nil {
		return ss.err
	}
	keys := append(append(dst.Keys[:0], c.Keys...), t.companion)
	// the times as integers: written in decimal, as strings would be, for
	// one small allocation each instead of two
	args := append(append(dst.Args[:0], c.Args...), t.tracked, now.UnixMilli(), max(safety.Milliseconds(), 1))
	*dst = c
	dst.Script, dst.Keys, dst.Args = ss.expiry, keys, args
	return nil
}
