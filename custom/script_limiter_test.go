package custom_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
)

// serverTimeLog is a sliding log that reads Redis TIME itself, in the style
// of many published limiters: ARGV = window µs, limit, request id.
const serverTimeLog = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
`

// A script that reads TIME runs on an injected clock: rewritten, with the
// time appended, and its decisions follow the injected time, not the
// server's.
func TestScriptLimiterServerTimeOnInjectedClock(t *testing.T) {
	l := limit.Limit{Count: 2, Window: time.Second}
	lim, err := custom.NewScriptLimiter(srv.Client(), "log.lua", serverTimeLog, []string{"{window_us}", "{limit}", "{request_id}"}, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	caps := lim.Capabilities()
	if !caps.InjectsTime || caps.Resolution != time.Microsecond || !lim.ReadsRedisTime() {
		t.Fatalf("capabilities %+v, reads server time %v; want InjectsTime at 1µs", caps, lim.ReadsRedisTime())
	}
	key := srv.Key(t)
	// far from the real clock: only the injected time can make these decisions
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, step := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {100 * time.Millisecond, true}, {999 * time.Millisecond, false}, {1000*time.Millisecond + 1*time.Microsecond, true}, {1050 * time.Millisecond, false}, {1100*time.Millisecond + time.Microsecond, true}} {
		d, err := lim.Allow(ctx, key, 1, algorithms.At(t0.Add(step.at)))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != step.want || !d.DecidedAt.Equal(t0.Add(step.at)) {
			t.Errorf("step %d at +%s: allowed %v decided at %s, want %v at the injected time", i, step.at, d.Allowed, d.DecidedAt, step.want)
		}
	}
	// RedisTime calls the script as written
	c, err := lim.Call(key, 1, algorithms.RedisTime())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Args) != 3 || !c.DecidedAt.IsZero() {
		t.Errorf("RedisTime call: args %v, decided at %s; want the 3 ARGV as written and no time", c.Args, c.DecidedAt)
	}
	if _, err := lim.Allow(ctx, srv.Key(t), 1, algorithms.RedisTime()); err != nil {
		t.Errorf("RedisTime: %v", err)
	}
}

// A script that reads only TIME's seconds has a 1 s resolution; one that
// reads no clock does not take an injected one; absolute expiries are
// reported.
func TestScriptLimiterClockScan(t *testing.T) {
	l := limit.Limit{Count: 2, Window: time.Second}
	cases := []struct {
		name, src  string
		injects    bool
		resolution time.Duration
		expiries   int
	}{
		{"seconds", "local now = redis.call('TIME')[1]\nredis.call('EXPIREAT', KEYS[1], now + 10)\nreturn 1", true, time.Second, 1},
		{"no clock", "local n = redis.call('INCR', KEYS[1])\nif n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end\nreturn n", false, 0, 0},
	}
	for _, c := range cases {
		lim, err := custom.NewScriptLimiter(srv.Client(), c.name, c.src, []string{"{window_ms}"}, 1, l)
		if err != nil {
			t.Fatal(err)
		}
		caps := lim.Capabilities()
		if caps.InjectsTime != c.injects || caps.Resolution != c.resolution || len(lim.AbsoluteExpiries()) != c.expiries {
			t.Errorf("%s: %+v, expiries %v; want injects %v, resolution %s, %d expiries", c.name, caps, lim.AbsoluteExpiries(), c.injects, c.resolution, c.expiries)
		}
	}
}

// Several keys: KEYS in order, built from {key} and the clock; every key
// stays under the request's key and in its hash slot.
func TestScriptLimiterKeys(t *testing.T) {
	l := limit.Limit{Count: 3, Window: time.Second}
	const echo = "return KEYS"
	t0 := time.UnixMilli(1_767_225_601_500)
	lim, err := custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "echo", Source: echo, Limit: l,
		Keys:    []string{"{key}:{floor(now_ms / window_ms)}", "{key}:{floor(now_ms / window_ms) - 1}", "{key}.timestamp", ""},
		Allowed: mustPredicate(t, "len(reply) == 4 && reply[4] == \"\"")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := lim.Call("p:{u1}", 1, algorithms.At(t0))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p:{u1}:1767225601", "p:{u1}:1767225600", "p:{u1}.timestamp", ""}
	if fmt.Sprint(c.Keys) != fmt.Sprint(want) {
		t.Errorf("keys %q, want %q", c.Keys, want)
	}
	// all four keys come back, the optional one empty
	d, err := lim.Allow(ctx, "p:{u1}", 1, algorithms.At(t0))
	if err != nil || !d.Allowed {
		t.Errorf("Allow: %+v, %v", d, err)
	}
	if got := lim.ClockKeys(); len(got) != 2 {
		t.Errorf("ClockKeys %q, want the two clock-built keys", got)
	}
	// keys from the clock need an injected one
	var se *custom.ScriptError
	if _, err := lim.Call("p:{u1}", 1, algorithms.RedisTime()); !errors.As(err, &se) || !strings.Contains(err.Error(), "needs an injected clock") {
		t.Errorf("RedisTime with clock keys: %v", err)
	}
	// a key without a hash tag: derived keys would hash elsewhere on a Cluster
	if _, err := lim.Call("p:u1", 1, algorithms.At(t0)); !errors.As(err, &se) || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("untagged key: %v", err)
	}
	// a template outside the request's key is refused when parsed, naming it
	for _, bad := range []string{"other:{key}", "{request_id}", "fixed"} {
		_, err := custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "x", Source: echo, Limit: l, Keys: []string{bad}})
		if name, _ := field.Name(err); name != "keys" || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("key template %q: %v", bad, err)
		}
	}
	// an expression naming key is checked per call
	lim, err = custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "x", Source: echo, Limit: l, Keys: []string{`{upper(key)}`}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Call("p:{u1}", 1, algorithms.At(t0)); !errors.As(err, &se) || !strings.Contains(err.Error(), "does not start with the request's key") {
		t.Errorf("expression leaving the key: %v", err)
	}
}

func mustPredicate(t *testing.T, src string) custom.ReplyPredicate {
	t.Helper()
	p, err := custom.ParseReplyPredicate(src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Reply predicates on real replies: a Lua false is nil; a reply the
// predicate cannot judge is a ScriptError wrapping ErrReplyShape, showing
// the reply and the predicate.
func TestScriptLimiterReplies(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Second}
	cases := []struct {
		src, allowed string
		want         bool
		err          string // in the error; "" for none
	}{
		{"return false", "reply != nil", false, ""},
		{"return true", "reply != nil", true, ""},
		{"return 5", "reply <= limit", true, ""},
		{"return 6", "reply <= limit", false, ""},
		{"return {0, -1}", "reply[2] >= 0", false, ""},
		{"return 2", "reply in [1, 2]", true, ""},
		{"return {3, 'x'}", "reply[1] == cost", true, ""},
		{"return false", "", false, `on reply nil: script reply has the wrong shape`},
		{"return 'OK'", "reply[1] == 1", false, `predicate "reply[1] == 1" on reply "OK" (a string): cannot index a string`},
	}
	for _, c := range cases {
		cfg := custom.ScriptConfig{Name: "t", Source: c.src, Limit: l}
		if c.allowed != "" {
			cfg.Allowed = mustPredicate(t, c.allowed)
		}
		lim, err := custom.NewScript(srv.Client(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		d, err := lim.Allow(ctx, srv.Key(t), 3, algorithms.RedisTime())
		var se *custom.ScriptError
		switch {
		case c.err == "" && (err != nil || d.Allowed != c.want):
			t.Errorf("%s, %s: %+v, %v; want allowed %v", c.src, c.allowed, d, err, c.want)
		case c.err != "" && (!errors.As(err, &se) || !errors.Is(err, custom.ErrReplyShape) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s, %s: error %v; want a ScriptError with %q", c.src, c.allowed, err, c.err)
		}
	}
}

// Argument expressions: arithmetic of the placeholders, and a fill error
// (division by zero) is a ScriptError naming the template.
func TestScriptLimiterArgs(t *testing.T) {
	l := limit.Limit{Count: 10, Window: 2 * time.Second}
	lim, err := custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "t", Source: "return ARGV", Limit: l,
		Args: []string{"{limit / window_s}", "{floor(now_s)}", "{key}"}, Allowed: mustPredicate(t, "true")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := lim.Call("k", 1, algorithms.At(time.UnixMilli(1_767_225_601_500)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "[5 1767225601 k]"; fmt.Sprint(c.Args) != want {
		t.Errorf("args %v, want %s", c.Args, want)
	}
	lim, err = custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "t", Source: "return 1", Limit: l, Args: []string{"{limit % (cost - 1)}"}})
	if err != nil {
		t.Fatal(err)
	}
	var se *custom.ScriptError
	if _, err := lim.Call("k", 1, algorithms.At(time.Now())); !errors.As(err, &se) || !strings.Contains(err.Error(), "ARGV[1]") {
		t.Errorf("division by zero: %v", err)
	}
}
