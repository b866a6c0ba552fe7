package custom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/vclock"
)

// ScriptLimiter runs a user's Lua rate-limit script as an algorithms.Limiter,
// so that ratelab can verify, compare, measure and benchmark scripts it did not
// write (the ones published in libraries and articles), exactly as written.
//
// Keys: KEYS[i] is the i-th key template filled for the request; without key
// templates, KEYS[1] is the request's key ("{key}"). ARGV[i] is the i-th
// argument template. Templates may hold expressions (ParseTemplate):
// "{key}:{floor(now_ms / window_ms)}", "{limit / window_s}".
//
// Reply: the request was allowed when the reply predicate holds
// (ParseReplyPredicate; ReplyIs(1) by default). A Lua false reaches it as nil.
// Remaining and RetryAfter are unknown (zero).
//
// Time: a script is given the time by its templates ({now_*}), or reads Redis
// TIME itself. A script that calls redis.call('TIME') runs on an injected Clock
// too: it is rewritten once by vclock.Rewrite, and each call with an injected
// Clock runs the rewritten script with that time appended to ARGV, so its TIME
// answers the injected time (algorithms.RedisTime runs the original). A script
// with neither reads no clock (it may still rely on key TTLs: a runner that
// emulates key expiry, harness.Runner.Expiry through algorithms.ExpiryCall,
// puts those on the virtual clock too): Allow then ignores the Clock and
// DecidedAt is zero. Safe for concurrent use.
type ScriptLimiter struct {
	rdb    redis.Scripter
	src    string // the script as given (Explain reads it)
	script algorithms.LuaScript
	// vt is the script rewritten for virtual time when it calls TIME, and
	// vtScript runs it; vt is nil when it does not (or when it cannot be
	// rewritten: vtErr says why).
	vt       *vclock.Script
	vtScript algorithms.LuaScript
	vtErr    error
	expiries []vclock.AbsoluteExpiry
	keys     []Template // never empty: {key} by default
	args     []Template
	allowed  ReplyPredicate
	limit    limit.Limit
	name     string
	seq      atomic.Uint64
	salt     string
	setup    *setupScript // nil: no set-up script
	// fn is the function a function target calls (function.go); nil
	// for a script
	fn *functionTarget
}

var _ algorithms.Scripted = (*ScriptLimiter)(nil)

// ErrReplyShape is wrapped by Allow when the script's reply is one the reply
// predicate cannot judge (for ReplyIs: neither an integer nor an array
// starting with one).
var ErrReplyShape = errors.New("script reply has the wrong shape")

// ScriptError is an error of a script target that no retry can mend: a
// reply its predicate cannot judge (Err then wraps ErrReplyShape), or a key
// or argument that cannot be built for a call (an expression dividing by
// zero, a key outside the trial's prefix or hash slot, a key built from the
// clock without an injected one). Every call would fail the same way, so a
// caller should stop at once, and never count it as Redis failing. Allow,
// Call and Decode of ScriptLimiter return it (wrapped); find it with
// errors.As.
type ScriptError struct {
	// Err says what went wrong, with the reply or template concerned.
	Err error
}

func (e *ScriptError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ScriptError) Unwrap() error { return e.Err }

// ScriptConfig describes a user's script target.
type ScriptConfig struct {
	// Name labels the limiter in reports (e.g. the script's file name).
	Name string
	// Source is the Lua script, as for EVAL.
	Source string
	// Keys are the templates of KEYS, in order; empty means one key, the
	// request's ("{key}"). Each must start with {key} (or be empty: an
	// optional key the script skips), so that every key stays under the
	// caller's prefix and, on a Redis Cluster, in the request key's hash
	// slot.
	Keys []string
	// Args are the templates of ARGV, in order.
	Args []string
	// Allowed says from the reply whether the request was allowed; the zero
	// ReplyPredicate means ReplyIs(1).
	Allowed ReplyPredicate
	// Limit is what the templates' {limit} and {window_*} stand for.
	Limit limit.Limit
	// Setup, when not "", is a set-up script (Lua, as for EVAL) run once
	// per request key before its first call, with the same KEYS and ARGV
	// (script_setup.go). Its reply is ignored; its error is the call's.
	// Scripts only.
	Setup string
	// FCall, when not "", makes the target a function (function.go):
	// Source is then a function library ("#!lua name=..."), FCall the
	// name of the function it registers that each call runs (FCALL, with
	// KEYS and ARGV as its keys and args), and Namespace the names its
	// libraries load under (FunctionLibraries), which the caller loads
	// before the first call.
	FCall, Namespace string
}

// NewScript parses the templates of c and returns the limiter. Errors name
// the field: "limit" or "window" (Limit.Validate), "keys" (a template that
// does not parse, or does not start with {key}), "args" (a template that
// does not parse), with the template and its position.
func NewScript(rdb redis.Scripter, c ScriptConfig) (*ScriptLimiter, error) {
	if err := c.Limit.Validate(); err != nil {
		return nil, err // a field error: "limit", "window" or "precision"
	}
	s := &ScriptLimiter{rdb: rdb, src: c.Source, script: algorithms.NewLuaScript(c.Source), allowed: c.Allowed, limit: c.Limit, name: c.Name, salt: algorithms.NewSalt()}
	if s.allowed.isZero() {
		s.allowed = ReplyIs(1)
	}
	switch {
	case c.FCall != "" && c.Setup != "":
		return nil, field.Errorf("setup", "a set-up script goes with a script, not a function")
	case c.FCall != "":
		if err := s.newFunction(c); err != nil {
			return nil, err
		}
	default:
		s.readClock(c.Source)
	}
	if c.Setup != "" {
		s.setup = newSetupScript(c.Source, c.Setup)
	}
	keys := c.Keys
	if len(keys) == 0 {
		keys = []string{"{key}"}
	}
	for i, src := range keys {
		t, err := ParseKeyTemplate(src)
		if err != nil {
			return nil, field.Errorf("keys", "KEYS[%d]: %w", i+1, err)
		}
		s.keys = append(s.keys, t)
	}
	for i, src := range c.Args {
		t, err := ParseTemplate(src)
		if err != nil {
			return nil, field.Errorf("args", "ARGV[%d]: %w", i+1, err)
		}
		s.args = append(s.args, t)
	}
	return s, nil
}

// NewScriptLimiter is NewScript with one key, the request's, and the reply
// predicate ReplyIs(allowedWhen). name labels it in reports (e.g. the
// script's file name). l is the limit the templates' {limit} and
// {window_*} stand for.
func NewScriptLimiter(rdb redis.Scripter, name, src string, templates []string, allowedWhen int64, l limit.Limit) (*ScriptLimiter, error) {
	return NewScript(rdb, ScriptConfig{Name: name, Source: src, Args: templates, Allowed: ReplyIs(allowedWhen), Limit: l})
}

// ParseKeyTemplate parses the template of a key (ParseTemplate) and refuses
// one that could leave the request key's prefix: it must start with the
// lone placeholder {key} ("{key}", "{key}.timestamp",
// "{key}:{floor(now_ms / window_ms)}"), or with an expression that names
// key (its value is checked per call: it must start with the key), or be
// empty (an optional key the script skips).
func ParseKeyTemplate(src string) (Template, error) {
	t, err := ParseTemplate(src)
	if err != nil {
		return Template{}, err
	}
	if len(t.parts) == 0 {
		return t, nil // "": an optional key, passed empty
	}
	switch p := t.parts[0]; {
	case p.name == "key", p.prog != nil && p.usesName("key"):
		return t, nil
	}
	return Template{}, fmt.Errorf("template %q must start with {key}: every key stays under the request key (ratelab's prefix: it removes only its own keys; and its hash tag, so that all keys of a call share a Redis Cluster slot); write e.g. {key}:%s", t.src, strings.TrimPrefix(t.src, "{"))
}

// usesName reports whether the expression part names placeholder n.
func (p part) usesName(n string) bool {
	for _, u := range p.uses {
		if u == n {
			return true
		}
	}
	return false
}

// readClock scans src for TIME calls and absolute expiries, and rewrites a
// script that calls TIME for virtual time.
func (s *ScriptLimiter) readClock(src string) {
	vt, err := vclock.Rewrite(src, vclock.Options{Time: true})
	if err != nil {
		// a function library, or a script the scan cannot lex: it runs as
		// written, on the server's clock
		s.vtErr = err
		s.expiries, _ = vclock.FindAbsoluteExpiries(src)
		return
	}
	s.expiries = vt.AbsoluteExpiries
	if vt.TimeCalls == 0 {
		return
	}
	s.vt, s.vtScript = &vt, algorithms.NewTimeScript(vt, src)
}

// ReadsRedisTime reports whether the script calls Redis TIME itself (and
// so runs rewritten on an injected Clock: see ScriptLimiter). Every client
// then shares one clock, the server's: a client's clock skew means nothing
// to the script.
func (s *ScriptLimiter) ReadsRedisTime() bool { return s.vt != nil }

// AbsoluteExpiries returns the absolute-expiry commands and options the
// script holds (EXPIREAT, PEXPIREAT, SET ... EXAT/PXAT, ...; see
// FindAbsoluteExpiries), in source order; nil when none. On an injected
// clock each compares that clock with Redis's real one (keys vanish early
// or late, which a report should say) unless the call goes through
// algorithms.ExpiryCall, which maps them between the clocks.
func (s *ScriptLimiter) AbsoluteExpiries() []vclock.AbsoluteExpiry { return s.expiries }

// VirtualTimeErr says why a script that may read TIME could not be
// rewritten for virtual time (ErrFunctionLibrary for "#!lua name=...", or
// a lexing error); nil otherwise.
func (s *ScriptLimiter) VirtualTimeErr() error { return s.vtErr }

// ClockKeys returns the key templates that read the clock (keys named by
// the time, "{key}:{floor(now_ms / window_ms)}"): such a script needs an
// injected Clock, and Call refuses algorithms.RedisTime. Nil when none.
func (s *ScriptLimiter) ClockKeys() []string {
	var out []string
	for _, k := range s.keys {
		if k.UsesClock() {
			out = append(out, k.src)
		}
	}
	return out
}

// ClockTemplates returns the key and argument templates that read the
// clock ({now_*}), keys first; nil when none. A caller that replays one
// call unchanged (bench) cannot take such a script.
func (s *ScriptLimiter) ClockTemplates() []string {
	var out []string
	for _, ts := range [][]Template{s.keys, s.args} {
		for _, t := range ts {
			if t.UsesClock() {
				out = append(out, t.src)
			}
		}
	}
	return out
}

// Name returns the name given to NewScript.
func (s *ScriptLimiter) Name() string { return s.name }

// Describe returns the limit, the key templates when they are not just
// {key}, the argument templates and the reply predicate when it is not the
// default: `50 per 2s, KEYS "{key}" "{key}.ts", ARGV "{limit}", allowed
// when reply != nil`.
func (s *ScriptLimiter) Describe() string {
	d := s.limit.String()
	if len(s.keys) != 1 || s.keys[0].src != "{key}" {
		d += ", KEYS"
		for _, k := range s.keys {
			d += " " + strconv.Quote(k.String())
		}
	}
	d += ", ARGV"
	for _, a := range s.args {
		d += " " + strconv.Quote(a.String())
	}
	if !s.allowed.is || s.allowed.n != 1 {
		d += ", allowed when " + s.allowed.String()
	}
	return d
}

// Capabilities implements algorithms.Limiter, read from the templates and the
// script: InjectsTime when the templates pass the time ({now_us}, {now_ms} or
// {now_s}) or the script calls TIME (run rewritten on the injected clock);
// TakesCost when the templates or the predicate use {cost} (else only cost 1
// means anything to it); Resolution 1 ms for {now_ms}, 1 µs for {now_us} or
// {now_s}, else the script's own TIME resolution (1 s when it reads only TIME's
// seconds, 1 µs otherwise; see vclock.Script.Resolution), zero when no time is
// passed or read.
func (s *ScriptLimiter) Capabilities() algorithms.Capabilities {
	c := algorithms.Capabilities{InjectsTime: s.usesClock() || s.vt != nil, TakesCost: s.uses("cost") || s.allowed.Uses("cost"), UsesKeys: true}
	switch {
	case s.uses("now_ms"):
		c.Resolution = time.Millisecond
	case s.uses("now_us", "now_s"):
		c.Resolution = time.Microsecond
	case s.vt != nil:
		c.Resolution = s.vt.Resolution
	}
	if s.vt != nil && s.vt.Resolution > 0 && c.Resolution > s.vt.Resolution {
		c.Resolution = s.vt.Resolution
	}
	return c
}

// uses reports whether a key or argument template names any of names.
func (s *ScriptLimiter) uses(names ...string) bool {
	for _, ts := range [][]Template{s.keys, s.args} {
		for _, t := range ts {
			if t.Uses(names...) {
				return true
			}
		}
	}
	return false
}

// usesClock reports whether a template or the predicate reads the clock.
func (s *ScriptLimiter) usesClock() bool {
	return s.uses(clockPlaceholders...) || s.allowed.Uses(clockPlaceholders...)
}

// Allow implements algorithms.Limiter. A Redis or script error is returned
// wrapped, with Redis's message; it is never a denial. A reply the predicate
// cannot judge, or a call that cannot be built, is a *ScriptError.
func (s *ScriptLimiter) Allow(ctx context.Context, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	return algorithms.Decide(ctx, s.rdb, s, key, cost, at)
}

// values are the placeholders' values of one request.
func (s *ScriptLimiter) values(key string, cost int64) Values {
	return Values{Window: s.limit.Window, Limit: s.limit.Count, Cost: cost, Key: key,
		RequestID: s.salt + "-" + strconv.FormatUint(s.seq.Add(1), 10)}
}

// Call implements algorithms.Scripted: KEYS are the key templates filled for
// this request ({key} is key), ARGV the argument templates. Templates that take
// the time get the injected one, or the local clock when at is Redis TIME;
// DecidedAt is that time. A script that calls TIME, given an injected clock, is
// called rewritten (its Script is the rewritten one) with the time appended to
// ARGV, and DecidedAt is that time; with algorithms.RedisTime it is called as
// written.
//
// Errors, as *ScriptError naming the template: an expression that cannot be
// filled (a division by zero); a key that does not start with key (an
// expression's value); on several keys, a key whose hash tag differs from
// KEYS[1]'s (a Redis Cluster would refuse the call with CROSSSLOT); a key
// template that reads the clock when at is algorithms.RedisTime. Cost outside
// 1..limit wraps algorithms.ErrCostExceedsLimit.
func (s *ScriptLimiter) Call(key string, cost int64, at algorithms.Clock) (algorithms.ScriptCall, error) {
	if err := algorithms.CheckCost(s.name, cost, s.limit.Count); err != nil {
		return algorithms.ScriptCall{}, err
	}
	v := s.values(key, cost)
	c := algorithms.ScriptCall{Script: s.script.Run, Expiry: s.script.Expiry, Cost: cost}
	injected, virtual := at.Injected()
	first := s.setup != nil && s.setup.first(key)
	if s.usesClock() || (s.vt != nil || first && s.setup.vt != nil) && virtual {
		v.Now = injected
		if !virtual {
			if ck := s.ClockKeys(); len(ck) > 0 {
				return algorithms.ScriptCall{}, &ScriptError{fmt.Errorf("%s: key template %q is built from the clock: it needs an injected clock (virtual or client), not Redis TIME", s.name, ck[0])}
			}
			v.Now = time.Now()
		}
		c.DecidedAt = v.Now.Truncate(time.Microsecond)
	}
	var err error
	if c.Keys, err = s.fillKeys(v); err != nil {
		return algorithms.ScriptCall{}, err
	}
	c.Args = make([]any, len(s.args))
	for i, a := range s.args {
		if c.Args[i], err = a.Render(v); err != nil {
			return algorithms.ScriptCall{}, &ScriptError{fmt.Errorf("%s: ARGV[%d]: %w", s.name, i+1, err)}
		}
	}
	switch {
	case first && s.setup.vt != nil && virtual:
		c.Script, c.Expiry, c.Args = s.setup.vtScript.Run, s.setup.vtScript.Expiry, s.setup.vt.Args(v.Now, c.Args...)
	case first:
		c.Script, c.Expiry = s.setup.script.Run, s.setup.script.Expiry
	case s.vt != nil && virtual:
		c.Script, c.Expiry, c.Args = s.vtScript.Run, s.vtScript.Expiry, s.vt.Args(v.Now, c.Args...)
		if s.fn != nil {
			c.Function = s.fn.vtFn
		}
	case s.fn != nil:
		c.Function = s.fn.fn
	}
	return c, nil
}

// fillKeys renders the key templates for v and checks that every key
// stays under v.Key and, with several keys, in its hash slot.
func (s *ScriptLimiter) fillKeys(v Values) ([]string, error) {
	if len(s.keys) == 1 && s.keys[0].src == "{key}" {
		return []string{v.Key}, nil // the common case
	}
	keys := make([]string, len(s.keys))
	tag := hashTag(v.Key)
	for i, t := range s.keys {
		k, err := t.Render(v)
		if err != nil {
			return nil, &ScriptError{fmt.Errorf("%s: KEYS[%d]: %w", s.name, i+1, err)}
		}
		if k != "" && !strings.HasPrefix(k, v.Key) {
			return nil, &ScriptError{fmt.Errorf("%s: KEYS[%d]: template %q gave %q, which does not start with the request's key %q: every key must stay under it", s.name, i+1, t.src, k, v.Key)}
		}
		if k != "" && len(s.keys) > 1 && hashTag(k) != tag {
			return nil, &ScriptError{fmt.Errorf("%s: KEYS[%d]: template %q gave %q, whose Redis Cluster hash tag %q is not the request key's %q: a Cluster would refuse the call (CROSSSLOT); give the request key a hash tag ({...}) or keep the template's braces out of the first tag",
				s.name, i+1, t.src, k, hashTag(k), tag)}
		}
		keys[i] = k
	}
	return keys, nil
}

// hashTag is what Redis Cluster hashes of key: the text between the first
// "{" and the next "}" when that is not empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Decode implements algorithms.Scripted: allowed when the reply predicate holds
// on reply (nil for a Lua false); DecidedAt is the call's. A reply the
// predicate cannot judge is a *ScriptError wrapping ErrReplyShape, showing the
// reply and the predicate.
func (s *ScriptLimiter) Decode(c algorithms.ScriptCall, reply any) (algorithms.Decision, error) {
	v := Values{Window: s.limit.Window, Limit: s.limit.Count, Now: c.DecidedAt, Cost: c.Cost}
	if len(c.Keys) > 0 {
		v.Key = c.Keys[0]
	}
	ok, err := s.allowed.Eval(reply, v)
	if err != nil {
		if s.allowed.is { // show the reply and the predicate, as expressions do
			err = fmt.Errorf("predicate %q on reply %s: %w", s.allowed.src, describeValue(reply), err)
		}
		if reply == nil {
			err = fmt.Errorf("%w (nil is a Lua false or nil: when it means denied, say so with a predicate such as reply != nil)", err)
		}
		return algorithms.Decision{}, &ScriptError{err}
	}
	return algorithms.Decision{Allowed: ok, DecidedAt: c.DecidedAt}, nil
}

// ParseAllowedReply extracts the verdict integer of a script reply: the
// reply itself when it is an integer, else the first element of an array
// reply when that is an integer; a string that Lua's tonumber reads as an
// integer ("1") counts as that integer in either place. Anything else
// wraps ErrReplyShape.
func ParseAllowedReply(v any) (int64, error) {
	first := v
	if a, ok := v.([]any); ok && len(a) > 0 {
		first = a[0]
	}
	if n, ok := stringAsNumber(first).(int64); ok {
		return n, nil
	}
	return 0, fmt.Errorf("%w: got %s, want an integer or an array whose first element is an integer", ErrReplyShape, describeReply(v))
}

func describeReply(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("the string %q", x)
	case []any:
		if len(x) == 0 {
			return "an empty array"
		}
		return fmt.Sprintf("an array starting with %s", describeReply(x[0]))
	}
	return fmt.Sprintf("%T %v", v, v)
}
