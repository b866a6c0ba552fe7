package algorithms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Capabilities says what a limiter can take. Verification and the commands
// read it to choose how to drive the limiter: on an injected (virtual) clock
// or in real time, with weighted costs or cost 1, one key or several.
type Capabilities struct {
	// InjectsTime: the limiter decides on the Clock it is given (the
	// harness may replay virtual time). False: it reads its own clock
	// (Redis TIME, or a server's), so it must be driven in real time.
	InjectsTime bool
	// TakesCost: costs above 1 mean something to it. False: send cost 1 only.
	TakesCost bool
	// Resolution is the finest time step the limiter tells apart on its
	// clock (1 µs for ratelab's scripts, 1 ms for a {now_ms} template);
	// zero means unknown.
	Resolution time.Duration
	// UsesKeys: the key passed to Allow selects its state. False (an HTTP
	// endpoint without {key}): every key shares one limit.
	UsesKeys bool
	// LoopFree: every script the limiter sends is one of ratelab's own or a
	// peer library's, without loops over unbounded input, so a call that
	// timed out never leaves it running until Redis's busy-reply-threshold:
	// the harness does not look for a script of its own to SCRIPT KILL
	// (which waits for that threshold, 5 s by default, on a server that
	// hangs). False (a user's script): it may loop, and a timed-out call
	// is followed by that look.
	LoopFree bool
}

// builtIn is the capability set of ratelab's own scripts: injected µs
// clock, weighted cost, one state per key, no loops.
var builtIn = Capabilities{InjectsTime: true, TakesCost: true, Resolution: time.Microsecond, UsesKeys: true, LoopFree: true}

// BuiltInCapabilities returns the capabilities of ratelab's own scripts
// (every built-in's): an injected clock of 1 µs resolution, weighted cost,
// one state per key, loop-free.
func BuiltInCapabilities() Capabilities { return builtIn }

// ScriptCall is the one Lua script call a Scripted limiter makes for one
// decision: EVALSHA Script.Hash() with Keys and Args (EVAL of the source
// when the server lacks it). DecidedAt is the time the call hands the
// script (truncated to 1 µs); zero when the script reads Redis TIME.
// Cost is the request's cost, for Decode (zero when the limiter does not
// set it: custom.ScriptLimiter does). Expiry is Script's key-expiry form,
// for ExpiryTag.Rewrite; nil for a script not made as a LuaScript.
//
// Function, when not "", makes the call FCALL Function with Keys and Args
// instead (a function of a library loaded with FUNCTION LOAD); Script is
// then nil.
type ScriptCall struct {
	Script    *redis.Script
	Function  string
	Keys      []string
	Args      []any
	DecidedAt time.Time
	Cost      int64
	Expiry    *ExpiryForm
}

// Scripted is a Limiter whose every decision is one Lua script call. Call
// describes that call without making it, and Decode reads its reply, so a
// caller can pipeline many decisions (bench, capacity's fills, virtual-time
// runs) and still get each Decision exactly as Allow would. Every algorithm
// of this package and custom.ScriptLimiter are Scripted;
// custom.HTTPLimiter is not. Implementations are safe for concurrent use.
type Scripted interface {
	Limiter
	// Call returns the call Allow would make for key, cost and at. Errors:
	// cost outside 1..limit wraps ErrCostExceedsLimit.
	Call(key string, cost int64, at Clock) (ScriptCall, error)
	// Decode turns the reply of c into a Decision. A reply of the wrong
	// shape is an error naming the reply.
	Decode(c ScriptCall, reply any) (Decision, error)
}

// CallWriter is a Scripted limiter that can write its call over a
// ScriptCall the caller keeps from one decision to the next: a pipelined
// caller then allocates no slices per decision (only boxed arguments that
// change: the time, a nonce). Every algorithm of this package but GCRA is
// one; custom.ScriptLimiter is not.
type CallWriter interface {
	Scripted
	// WriteCall writes the call Call would return over *c: c's Keys and
	// Args are reused (overwritten from index 0, grown when too short),
	// its other fields replaced. Errors as Call's (c is then left as it
	// was). Safe for concurrent use on distinct c.
	WriteCall(c *ScriptCall, key string, cost int64, at Clock) error
}

var (
	_ CallWriter = (*SlidingLog)(nil)
	_ CallWriter = (*FixedWindow)(nil)
	_ CallWriter = (*SlidingCounter)(nil)
	_ CallWriter = (*TokenBucket)(nil)
	_ CallWriter = (*BucketedHash)(nil)
)

// newCall returns the call WriteCall writes over a fresh ScriptCall, as
// Call returns it (the zero ScriptCall with the error).
func newCall(w CallWriter, key string, cost int64, at Clock) (ScriptCall, error) {
	var c ScriptCall
	if err := w.WriteCall(&c, key, cost, at); err != nil {
		return ScriptCall{}, err
	}
	return c, nil
}

// Decide makes the decision of s on rdb, as the Allow of a Scripted
// limiter does: its call (s.Call), run by EVALSHA (EVAL on NOSCRIPT) or
// FCALL (ScriptCall.Function: rdb must be a client that sends it),
// decoded (s.Decode). A Lua false or nil reply reaches Decode as nil.
// Errors: Call's as they come; Redis's and Decode's wrapped with s.Name().
// Safe for concurrent use when s is.
func Decide(ctx context.Context, rdb redis.Scripter, s Scripted, key string, cost int64, at Clock) (Decision, error) {
	c, err := s.Call(key, cost, at)
	if err != nil {
		return Decision{}, err
	}
	var v any
	if c.Function != "" {
		f, ok := rdb.(functionCaller)
		if !ok {
			return Decision{}, fmt.Errorf("%s: FCALL %s: the client %T cannot send FCALL", s.Name(), c.Function, rdb)
		}
		v, err = f.FCall(ctx, c.Function, c.Keys, c.Args...).Result()
	} else {
		v, err = c.Script.Run(ctx, rdb, c.Keys, c.Args...).Result()
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return Decision{}, fmt.Errorf("%s: %w", s.Name(), err)
	}
	d, err := s.Decode(c, v)
	if err != nil {
		return Decision{}, fmt.Errorf("%s: %w", s.Name(), err)
	}
	return d, nil
}

// functionCaller is a client that sends FCALL (*redis.Client,
// *redis.ClusterClient, *redis.Ring, *redis.Conn).
type functionCaller interface {
	FCall(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd
}

// decodeCommon decodes the reply of ratelab's own scripts (ParseReply).
func decodeCommon(_ ScriptCall, reply any) (Decision, error) { return ParseReply(reply) }
