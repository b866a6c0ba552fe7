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
// Remaining and RetryAfter are unknown (zero). A script whose templates
// contain no {now_*} reads its own clock: Allow then ignores the Clock and
// DecidedAt is zero. Safe for concurrent use.
type ScriptLimiter struct {
	rdb         redis.Scripter
	script      *redis.Script
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

// Capabilities implements Limiter, read from the templates: InjectsTime
// when they pass the time ({now_us}, {now_ms} or {now_s}; else the script
// reads its own clock), TakesCost when they pass {cost} (else only cost 1
// means anything to it), Resolution 1 ms for {now_ms}, 1 µs for {now_us}
// or {now_s}, zero when no time is passed.
func (s *ScriptLimiter) Capabilities() Capabilities {
	c := Capabilities{InjectsTime: s.uses("now_us", "now_ms", "now_s"), TakesCost: s.uses("cost"), UsesKeys: true}
	switch {
	case s.uses("now_ms"):
		c.Resolution = time.Millisecond
	case s.uses("now_us", "now_s"):
		c.Resolution = time.Microsecond
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
// this request. A script that takes the time gets the injected one, or the
// local clock when at is Redis TIME; DecidedAt is that time.
func (s *ScriptLimiter) Call(key string, cost int64, at Clock) (ScriptCall, error) {
	if err := checkCost(s.name, cost, s.limit.Limit); err != nil {
		return ScriptCall{}, err
	}
	v := Values{Window: s.limit.Window, Limit: s.limit.Limit, Cost: cost,
		RequestID: s.salt + "-" + strconv.FormatUint(s.seq.Add(1), 10)}
	c := ScriptCall{Script: s.script, Keys: []string{key}}
	if s.Capabilities().InjectsTime {
		if t, ok := at.Injected(); ok {
			v.Now = t
		} else {
			v.Now = time.Now()
		}
		c.DecidedAt = v.Now.Truncate(time.Microsecond)
	}
	c.Args = make([]any, len(s.args))
	for i, a := range s.args {
		c.Args[i] = a.Fill(v)
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
