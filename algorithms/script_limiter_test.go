package algorithms_test

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
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
	l := algorithms.Limit{Limit: 2, Window: time.Second}
	lim, err := algorithms.NewScriptLimiter(srv.Client(), "log.lua", serverTimeLog, []string{"{window_us}", "{limit}", "{request_id}"}, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	caps := lim.Capabilities()
	if !caps.InjectsTime || caps.Resolution != time.Microsecond || !lim.ReadsServerTime() {
		t.Fatalf("capabilities %+v, reads server time %v; want InjectsTime at 1µs", caps, lim.ReadsServerTime())
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
	// ServerTime calls the script as written
	c, err := lim.Call(key, 1, algorithms.ServerTime())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Args) != 3 || !c.DecidedAt.IsZero() {
		t.Errorf("ServerTime call: args %v, decided at %s; want the 3 ARGV as written and no time", c.Args, c.DecidedAt)
	}
	if _, err := lim.Allow(ctx, srv.Key(t), 1, algorithms.ServerTime()); err != nil {
		t.Errorf("ServerTime: %v", err)
	}
}

// A script that reads only TIME's seconds has a 1 s resolution; one that
// reads no clock does not take an injected one; absolute expiries are
// reported.
func TestScriptLimiterClockScan(t *testing.T) {
	l := algorithms.Limit{Limit: 2, Window: time.Second}
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
		lim, err := algorithms.NewScriptLimiter(srv.Client(), c.name, c.src, []string{"{window_ms}"}, 1, l)
		if err != nil {
			t.Fatal(err)
		}
		caps := lim.Capabilities()
		if caps.InjectsTime != c.injects || caps.Resolution != c.resolution || len(lim.AbsoluteExpiries()) != c.expiries {
			t.Errorf("%s: %+v, expiries %v; want injects %v, resolution %s, %d expiries", c.name, caps, lim.AbsoluteExpiries(), c.injects, c.resolution, c.expiries)
		}
	}
}
