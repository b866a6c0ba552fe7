package vclock

import "time"

// A run on the virtual clock decides a day of traffic in a second of real
// time, so the TTLs a limiter gives its keys cannot run on the wall clock:
// each call is rewritten (Options.Expiry) to keep its keys' deadlines in
// virtual time, in a companion hash of the call's hash tag, and to give
// every key a real TTL past its virtual one by a safety TTL.
//
// The safety TTL has two jobs. Within a call it keeps a stall of Redis from
// expiring a key early (every real expiry is that much past its virtual
// one). Between calls it bounds the life of what a killed command leaves:
// every tracked key and companion has a real TTL of at most the safety TTL,
// however long the TTL the limiter gave it (the key's remainder comes back
// at the next call of its tag, before the limiter's code), and never none.
// SafetyTTL makes it grow with the run, so a command still running keeps
// its keys however long it lasts.

// SafetyBase is the least safety TTL: the real TTL a tracked key keeps
// between calls at the start of a run.
const SafetyBase = 10 * time.Minute

// SafetyTTL returns the safety TTL of a call made elapsed (real time)
// after the run's first call, for a limiter of window window: SafetyBase
// plus twice elapsed plus window (both at least zero).
func SafetyTTL(elapsed, window time.Duration) time.Duration {
	return SafetyBase + 2*elapsed + window
}

// CompanionKey returns the companion hash that holds the virtual deadlines
// of the keys of hash tag tag under prefix: prefix + "~vt{" + tag + "}", in
// the cluster slot of the keys prefix + "{" + tag + "}...". Its fields are
// the keys it tracks (and, in the full form, a placeholder field "").
func CompanionKey(prefix, tag string) string { return prefix + "~vt{" + tag + "}" }
