package harness

import (
	_ "embed"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
)

// Key expiry on the virtual clock (Runner.Expiry).
//
// A virtual-time run decides a day of traffic in a second of real time, so
// the TTLs the limiter gives its keys cannot run on the wall clock. Around
// each call, in the same MULTI (nothing else runs between them), the runner
// sends two small scripts of its own on the arrival key's companion hash
// "<Prefix>~vt{<key>}" (same hash tag, so same cluster slot):
//
//   - before (expiry_before.lua): every tracked key of the tag whose virtual
//     deadline has passed is removed (UNLINK), exactly as Redis removes a
//     key: gone once now_ms > its expiry time in ms;
//   - after (expiry_after.lua): every key the call may have touched (its
//     Keys, and on request the keys of the tag found by SCAN) that now has
//     a TTL got it from the call (tracked keys are kept persistent between
//     calls): its virtual deadline is the call's virtual time plus that TTL
//     (never less than the TTL the call set), and it is made persistent
//     again. Keys without a TTL never expire.
//
// So during a call its tracked keys have no TTL: a script that reads TTL
// sees -1 (and one that sets a TTL only when there is none sets it again:
// its key lives longer, never shorter), and a script that clears a TTL
// (SET without KEEPTTL, PERSIST) keeps the deadline the key had. Both err
// on the late side: a key never vanishes earlier than Redis would remove it.
//
// Keys a limiter writes besides its call's Keys (fixed-window's per-window
// counters "<key>:<n>") are found by a SCAN of "<Prefix>{<key>}*" after the
// job's first decision; when there are any, every later call scans its tag
// (a SCAN of the keyspace per call: cheap on verify's own Redis). Keys a
// script names otherwise, or writes only later, keep their real TTL.
//
// Absolute expiries (EXPIREAT, PXAT...) in a script on virtual time compare
// the virtual clock with the real one: not emulated (see
// algorithms.FindAbsoluteExpiries).

var (
	//go:embed expiry_before.lua
	expiryBeforeSrc string
	//go:embed expiry_after.lua
	expiryAfterSrc string

	expiryBeforeScript = redis.NewScript(expiryBeforeSrc)
	expiryAfterScript  = redis.NewScript(expiryAfterSrc)
)

// companionKey is the hash that holds the virtual deadlines of the keys of
// tag key under prefix.
func companionKey(prefix, key string) string { return prefix + "~vt{" + key + "}" }

// expiryBefore is the call that expires tag key's keys at virtual time vnow.
func expiryBefore(prefix, key string, vnow time.Time) algorithms.ScriptCall {
	return algorithms.ScriptCall{Script: expiryBeforeScript, Keys: []string{companionKey(prefix, key)},
		Args: []any{strconv.FormatInt(vnow.UnixMicro(), 10)}}
}

// expiryAfter is the call that reads the TTLs the call at vnow left on keys
// (and, with scan, on every key of the tag); its reply counts the keys the
// scan found besides keys.
func expiryAfter(prefix, key string, keys []string, vnow time.Time, scan bool) algorithms.ScriptCall {
	pattern := ""
	if scan {
		pattern = globEscape(prefix) + "{" + globEscape(key) + "}*"
	}
	return algorithms.ScriptCall{Script: expiryAfterScript, Keys: append([]string{companionKey(prefix, key)}, keys...),
		Args: []any{strconv.FormatInt(vnow.UnixMicro(), 10), pattern}}
}

// globEscape escapes the glob characters of Redis MATCH patterns.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}
