package algorithms

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ScriptLimiter runs a user's Lua rate-limit script as a Limiter, so that
// ratelab can verify scripts it did not write (for example the ones printed
// in articles).
//
// KEYS[1] is the key; ARGV[i] is the i-th template filled for the request.
// The reply must be an integer, or an array whose first element is an
// integer; the request was allowed when that integer equals AllowedWhen.
// Remaining and RetryAfter are unknown (zero).
//
// Time: a script is given the time by its templates ({now_*}), or reads
// Redis TIME itself. A script that calls redis.call('TIME') runs on an
// injected Clock too: it is rewritten once by WithVirtualTime, and each call
// with an injected Clock runs the rewritten script with that time appended
// to ARGV, so its TIME answers the injected time (ServerTime runs the
// original). A script with neither reads no clock (it may still rely on key
// TTLs, which only run in real time): Allow then ignores the Clock and
// DecidedAt is zero. Safe for concurrent use.
type ScriptLimiter struct {
	rdb    redis.Scripter
	script *redis.Script
	// vt is the script rewritten for virtual time when it calls TIME, and
	// vtScript runs it; vt is nil when it does not (or when it cannot be
	// rewritten: vtErr says why).
	vt          *VirtualTimeScript
	vtScript    *redis.Script
	vtErr       error
	expiries    []AbsoluteExpiry
	args        []Template
	allowedWhen int64
	limit       Limit
	name        string
	seq         atomic.Uint64
	salt        string
}

var _ Scripted = (*ScriptLimiter)(nil)

// ErrReplyShape is wrapped by Allow when the script's reply is neither an
// integer nor an array starting with one.
var ErrReplyShape = errors.New("script reply has the wrong shape")

// NewScriptLimiter parses the argument templates and returns the limiter.
// name labels it in reports (e.g. the script's file name). l is the limit the
// templates' {limit} and {window_*} stand for.
func NewScriptLimiter(rdb redis.Scripter, name, src string, templates []string, allowedWhen int64, l Limit) (*ScriptLimiter, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	s := &ScriptLimiter{rdb: rdb, script: redis.NewScript(src), allowedWhen: allowedWhen, limit: l, name: name, salt: newSalt()}
	s.readClock(src)
	for i, src := range templates {
		t, err := ParseTemplate(src)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		s.args = append(s.args, t)
	}
	return s, nil
}

// Name returns the name given to NewScriptLimiter.
func (s *ScriptLimiter) Name() string { return s.name }

// Describe returns the limit and the argument templates.
func (s *ScriptLimiter) Describe() string {
	d := s.limit.String() + ", ARGV"
	for _, a := range s.args {
		d += " " + strconv.Quote(a.String())
	}
	return d
}

// readClock scans src for TIME calls and absolute expiries, and rewrites a
// script that calls TIME for virtual time.
func (s *ScriptLimiter) readClock(src string) {
	vt, err := WithVirtualTime(src)
	if err != nil {
		// a function library, or a script the scan cannot lex: it runs as
		// written, on the server's clock
		s.vtErr = err
		s.expiries, _ = FindAbsoluteExpiries(src)
		return
	}
	s.expiries = vt.AbsoluteExpiries
	if vt.TimeCalls == 0 {
		return
	}
	s.vt, s.vtScript = &vt, redis.NewScript(vt.Source)
}

// ReadsServerTime reports whether the script calls Redis TIME itself (and
// so runs rewritten on an injected Clock: see ScriptLimiter). Every client
// then shares one clock, the server's: a client's clock skew means nothing
// to the script.
func (s *ScriptLimiter) ReadsServerTime() bool { return s.vt != nil }

// AbsoluteExpiries returns the absolute-expiry commands and options the
// script holds (EXPIREAT, PEXPIREAT, SET ... EXAT/PXAT, ...; see
// FindAbsoluteExpiries), in source order; nil when none. On an injected
// clock each compares that clock with Redis's real one: keys vanish early
// or late, which a report should say.
func (s *ScriptLimiter) AbsoluteExpiries() []AbsoluteExpiry { return s.expiries }

// VirtualTimeErr says why a script that may read TIME could not be
// rewritten for virtual time (ErrFunctionLibrary for "#!lua name=...", or
// a lexing error); nil otherwise.
func (s *ScriptLimiter) VirtualTimeErr() error { return s.vtErr }

// Capabilities implements Limiter, read from the templates and the script:
// InjectsTime when the templates pass the time ({now_us}, {now_ms} or
// {now_s}) or the script calls TIME (run rewritten on the injected clock);
// TakesCost when the templates pass {cost} (else only cost 1 means anything
// to it); Resolution 1 ms for {now_ms}, 1 µs for {now_us} or {now_s}, else
// the script's own TIME resolution (1 s when it reads only TIME's seconds,
// 1 µs otherwise; see VirtualTimeScript.Resolution), zero when no time is
// passed or read.
func (s *ScriptLimiter) Capabilities() Capabilities {
	c := Capabilities{InjectsTime: s.uses(clockPlaceholders...) || s.vt != nil, TakesCost: s.uses("cost"), UsesKeys: true}
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

func (s *ScriptLimiter) uses(names ...string) bool {
	for _, a := range s.args {
		if a.Uses(names...) {
			return true
		}
	}
	return false
}

// Allow implements Limiter. A Redis or script error is returned wrapped,
// with Redis's message; it is never a denial.
func (s *ScriptLimiter) Allow(ctx context.Context, key string, cost int64, at Clock) (Decision, error) {
	return allow(ctx, s.rdb, s, key, cost, at)
}

// Call implements Scripted: KEYS[1] is key, ARGV the templates filled for
// this request. Templates that take the time get the injected one, or the
// local clock when at is Redis TIME; DecidedAt is that time. A script that
// calls TIME, given an injected clock, is called rewritten (its Script is
// the rewritten one) with the time appended to ARGV, and DecidedAt is that
// time; with ServerTime it is called as written.
func (s *ScriptLimiter) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	if err := checkCost(s.name, cost, s.limit.Limit); err != nil {
		return ScriptCall{}, err
	}
	v := Values{Window: s.limit.Window, Limit: s.limit.Limit, Cost: cost,
		RequestID: s.salt + "-" + strconv.FormatUint(s.seq.Add(1), 10)}
	c := ScriptCall{Script: s.script, Keys: []string{key}}
	injected, virtual := at.Injected()
	if s.uses(clockPlaceholders...) || s.vt != nil && virtual {
		v.Now = injected
		if !virtual {
			v.Now = time.Now()
		}
		c.DecidedAt = v.Now.Truncate(time.Microsecond)
	}
	c.Args = make([]any, len(s.args))
	for i, a := range s.args {
		c.Args[i] = a.Fill(v)
	}
	if s.vt != nil && virtual {
		c.Script, c.Args = s.vtScript, s.vt.Args(v.Now, c.Args...)
	}
	return c, nil
}

// Decode implements Scripted: allowed when the reply's verdict integer
// (ParseAllowedReply) equals AllowedWhen; DecidedAt is the call's.
func (s *ScriptLimiter) Decode(c ScriptCall, reply any) (Decision, error) {
	n, err := ParseAllowedReply(reply)
	if err != nil {
		return Decision{}, err
	}
	return Decision{Allowed: n == s.allowedWhen, DecidedAt: c.DecidedAt}, nil
}

// ParseAllowedReply extracts the verdict integer of a script reply: the
// reply itself when it is an integer, else the first element of an array
// reply when that is an integer. Anything else wraps ErrReplyShape.
func ParseAllowedReply(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case []any:
		if len(x) > 0 {
			if n, ok := x[0].(int64); ok {
				return n, nil
			}
		}
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
