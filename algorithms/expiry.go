package algorithms

import (
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/vclock"
)

// ExpiryForm is the key-expiry form of one script: what vclock.Rewrite
// (Options.Expiry: ExpiryLean) makes of the script's original source, made
// on first use and kept by the ExpiryForm. A ScriptCall carries its
// script's ExpiryForm (ScriptCall.Expiry); it lives as long as the limiter
// that made it (the built-ins' as long as the process). Safe for
// concurrent use.
type ExpiryForm struct {
	// function, when not "", is the function (FCALL) that is the
	// key-expiry form of a function's call: no script to make
	function string
	src      string // the original source
	withTime bool   // the script runs src with the TIME rewrite
	once     sync.Once
	script   *redis.Script
	err      error
}

// newExpiryForm returns the ExpiryForm of a script that runs src
// (withTime: src with the TIME rewrite).
func newExpiryForm(src string, withTime bool) *ExpiryForm {
	return &ExpiryForm{src: src, withTime: withTime}
}

// get returns the expiry form's script, rewriting the source on first use.
func (f *ExpiryForm) get() (*redis.Script, error) {
	f.once.Do(func() {
		vt, err := vclock.Rewrite(f.src, vclock.Options{Time: f.withTime, Expiry: vclock.ExpiryLean})
		if err != nil {
			f.err = fmt.Errorf("virtual key expiry: %w", err)
			return
		}
		f.script = redis.NewScript(vt.Source)
	})
	return f.script, f.err
}

// LuaScript is a script ratelab sends (Run) and its key-expiry form
// (Expiry): the Script and Expiry of the ScriptCalls that run it. Safe for
// concurrent use.
type LuaScript struct {
	Run    *redis.Script
	Expiry *ExpiryForm
}

// FunctionExpiry is the ExpiryForm of a function's calls
// (ScriptCall.Function): a call rewritten by ExpiryTag.Rewrite calls the
// function fn instead, the key-expiry form of the same function, from a
// library the caller rewrote with vclock.RewriteLibrary (Options.Expiry)
// and loaded.
func FunctionExpiry(fn string) *ExpiryForm { return &ExpiryForm{function: fn} }

// NewLuaScript is the LuaScript of src as written.
func NewLuaScript(src string) LuaScript {
	return LuaScript{Run: redis.NewScript(src), Expiry: newExpiryForm(src, false)}
}

// NewTimeScript is the LuaScript of vt, which is src rewritten for virtual
// TIME (vclock.Rewrite with Options.Time): Run runs vt.Source, and Expiry
// rewrites src for both TIME and key expiry.
func NewTimeScript(vt vclock.Script, src string) LuaScript {
	return LuaScript{Run: redis.NewScript(vt.Source), Expiry: newExpiryForm(src, true)}
}

// ExpiryCall returns c rewritten to emulate key expiry at virtual time now
// in the same call (see vclock.Rewrite): its script rewritten, the
// companion hash appended to its keys and tracked (the prefix of the keys
// to track: the call's tagged key), now (in ms) and safety (the real TTL
// every tracked key and the companion keep after the call, rounded down to
// the ms; at least 1 ms) appended to its arguments. c's own slices are not
// changed. The companion must hash to the slot of c's keys (same hash tag).
// Errors: c carries no ExpiryForm (its script was not made as a LuaScript:
// the built-ins' and a user's script's are), or its source cannot be
// rewritten (a function library). Safe for concurrent use; each script is
// rewritten once.
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
	if c.Expiry == nil && c.Function != "" {
		return fmt.Errorf("virtual key expiry: function %s has no key-expiry form", c.Function)
	}
	if c.Expiry == nil {
		return fmt.Errorf("virtual key expiry: script %s is not one of ratelab's (its source is unknown)", c.Script.Hash())
	}
	var script *redis.Script
	if c.Expiry.function == "" {
		var err error
		if script, err = c.Expiry.get(); err != nil {
			return err
		}
	}
	keys := append(append(dst.Keys[:0], c.Keys...), t.companion)
	// the times as integers: written in decimal, as strings would be, for
	// one small allocation each instead of two
	args := append(append(dst.Args[:0], c.Args...), t.tracked, now.UnixMilli(), max(safety.Milliseconds(), 1))
	*dst = c
	dst.Script, dst.Function, dst.Keys, dst.Args = script, c.Expiry.function, keys, args
	return nil
}
