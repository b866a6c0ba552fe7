// Package custom holds the limiters a user brings, as opposed to the
// built-ins of package algorithms: a Lua script run as written
// (ScriptLimiter: KEYS and ARGV filled from templates, the verdict read by
// a reply predicate, an optional set-up script), the same script run
// client-side as separate commands (ClientSide, on the Lua VM of
// custom/clientside), and an HTTP endpoint taken as a black box
// (HTTPLimiter). It is the toolchain that describes a limiter ratelab did
// not write: ParseTemplate and its expressions, ParseReplyPredicate.
//
// sliding-log-naive (NewSlidingLogNaive) is the one limiter of ratelab's
// own here: it is client-side, built on ClientSide; targets registers it
// by name beside the built-ins.
//
// Every limiter of the package implements algorithms.Limiter, and
// ScriptLimiter algorithms.Scripted (its calls go through
// algorithms.ScriptPipe and algorithms.ExpiryCall as the built-ins' do).
package custom
