package vclock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/vclock"
	"github.com/redis/go-redis/v9"
)

// vt0 is a virtual instant far from the real clock, with a µs part that has
// leading zeros (TIME answers "123", not "000123").
var vt0 = time.Date(2031, 3, 4, 5, 6, 7, 123_000, time.UTC)

func rewrite(t *testing.T, src string) vclock.Script {
	t.Helper()
	vt, err := vclock.Rewrite(src, vclock.Options{Time: true})
	if err != nil {
		t.Fatalf("Rewrite: %v", err)
	}
	return vt
}

// evalAt runs the rewritten script at virtual time now.
func evalAt(t *testing.T, vt vclock.Script, now time.Time, keys []string, args ...any) (any, error) {
	t.Helper()
	return srv.Client().Eval(t.Context(), vt.Source, keys, vt.Args(now, args...)...).Result()
}

// timePair is what TIME must answer at t: {"sec", "usec"} without padding.
func timePair(t time.Time) []any {
	return []any{fmt.Sprint(t.Unix()), fmt.Sprint(t.Nanosecond() / 1000)}
}

func TestVirtualTimeReplyTypes(t *testing.T) {
	// The real server's TIME: a table of two strings.
	const src = "local t = redis.call('TIME'); return {#t, type(t), type(t[1]), type(t[2])}"
	real, err := srv.Client().Eval(t.Context(), src, nil).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(2), "table", "string", "string"}
	if fmt.Sprint(real) != fmt.Sprint(want) {
		t.Fatalf("real TIME: got %v, want %v", real, want)
	}
	got, err := evalAt(t, rewrite(t, src), vt0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(real) {
		t.Errorf("virtual TIME: got %v, want the real server's %v", got, real)
	}
}

func TestVirtualTimeAnswersTIME(t *testing.T) {
	cases := []struct {
		name string
		src  string
	}{
		{"single quotes", "return redis.call('TIME')"},
		{"double quotes, lower case", `return redis.call("time")`},
		{"mixed case, spaces", "return redis . call ( 'TiMe' )"},
		{"string call syntax", "return redis.call'TIME'"},
		{"pcall", "return redis.pcall('TIME')"},
		{"command in a variable", "local c = 'TIME'; return redis.call(c)"},
		{"built command", "return redis.call('TI' .. 'ME')"},
		{"alias of redis.call", "local call = redis.call; return call('TIME')"},
		{"alias of redis.pcall", "local pcall = redis.pcall; return pcall('time')"},
		{"indexed", "local t = redis.call('TIME'); return {t[1], t[2]}"},
		{"in a comment and a string first", "-- redis.call('TIME')\nlocal s = \"redis.call('TIME')\"\n--[[ redis.call('GET') ]] return redis.call('TIME')"},
	}
	for _, c := range cases {
		vt := rewrite(t, c.src)
		for _, now := range []time.Time{vt0, vt0.Add(-400 * 24 * time.Hour), time.Unix(0, 5000), time.Unix(1, 0)} {
			got, err := evalAt(t, vt, now, nil)
			if err != nil {
				t.Fatalf("%s at %v: %v\nsource: %s", c.name, now, err, vt.Source)
			}
			if want := timePair(now); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s at %v: got %v, want %v", c.name, now, got, want)
			}
		}
	}
}

func TestVirtualTimePassesOtherCommands(t *testing.T) {
	key := srv.Key(t)
	cases := []struct {
		name string
		src  string
	}{
		{"literal commands", "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])"},
		{"pcall", "redis.pcall('SET', KEYS[1], ARGV[1]); return redis.pcall('GET', KEYS[1])"},
		{"commands in variables", "local s, g = 'SET', 'get'; redis.call(s, KEYS[1], ARGV[1]); return redis.call(g, KEYS[1])"},
		{"alias", "local call = redis.call; call('SET', KEYS[1], ARGV[1]); return call('GET', KEYS[1])"},
		{"other redis fields", "redis.setresp(2); redis.call('SET', KEYS[1], ARGV[1]); return redis.status_reply(redis.call('GET', KEYS[1]))"},
	}
	for i, c := range cases {
		val := fmt.Sprintf("v%d", i)
		got, err := evalAt(t, rewrite(t, c.src), vt0, []string{key}, val)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != val {
			t.Errorf("%s: script got %v, want %q", c.name, got, val)
		}
		if v, err := srv.Client().Get(t.Context(), key).Result(); err != nil || v != val {
			t.Errorf("%s: GET from outside: got %q, %v, want %q", c.name, v, err, val)
		}
	}
	// a pcall'd error stays a value
	got, err := evalAt(t, rewrite(t, "local r = redis.pcall('NOPE'); return type(r) .. ':' .. tostring(r.err ~= nil)"), vt0, nil)
	if err != nil || got != "table:true" {
		t.Errorf("pcall of an unknown command: got %v, %v, want table:true", got, err)
	}
}

func TestVirtualTimeARGV(t *testing.T) {
	// ARGV is a mutable table in Redis 7: the prefix pops the time off it.
	const src = "return {#ARGV, tostring(ARGV[#ARGV]), tostring(ARGV[1])}"
	vt := rewrite(t, src)
	for _, args := range [][]any{nil, {"a"}, {"a", "b", "c"}} {
		want, err := srv.Client().Eval(t.Context(), src, nil, args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		got, err := evalAt(t, vt, vt0, nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ARGV %v: rewritten got %v, original %v", args, got, want)
		}
	}
	// without the appended time: a clear error, not a wrong clock
	_, err := srv.Client().Eval(t.Context(), vt.Source, nil, "a", "b").Result()
	if err == nil || !strings.Contains(err.Error(), "ratelab virtual time") {
		t.Errorf("missing time argument: got %v, want a ratelab virtual time error", err)
	}
}

func TestVirtualTimeShebang(t *testing.T) {
	key := srv.Key(t)
	const src = "#!lua flags=no-writes\nlocal t = redis.call('TIME')\nreturn t"
	vt := rewrite(t, src)
	if !strings.HasPrefix(vt.Source, "#!lua flags=no-writes\nlocal __ratelab_vt") {
		t.Fatalf("shebang not kept first:\n%s", vt.Source)
	}
	if got, want := strings.Count(vt.Source, "\n"), strings.Count(src, "\n"); got != want {
		t.Errorf("rewritten has %d newlines, original %d", got, want)
	}
	for _, ro := range []bool{false, true} {
		var got any
		var err error
		if ro {
			got, err = srv.Client().EvalRO(t.Context(), vt.Source, nil, vt.Args(vt0)...).Result()
		} else {
			got, err = evalAt(t, vt, vt0, nil)
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(timePair(vt0)) {
			t.Errorf("EVAL_RO=%v: got %v, %v, want %v", ro, got, err, timePair(vt0))
		}
	}
	// the flags still hold: a write is refused
	w := rewrite(t, "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'x')")
	if _, err := evalAt(t, w, vt0, []string{key}); err == nil || !strings.Contains(err.Error(), "Write commands are not allowed") {
		t.Errorf("write under no-writes: got %v, want a refusal", err)
	}
	// a shebang and nothing else still compiles
	if _, err := evalAt(t, rewrite(t, "#!lua"), vt0, nil); err != nil && !errors.Is(err, redis.Nil) {
		t.Errorf("bare shebang: %v", err)
	}
	if _, err := vclock.Rewrite("#!lua name=mylib\nredis.register_function('f', function() return 1 end)", vclock.Options{Time: true}); !errors.Is(err, vclock.ErrFunctionLibrary) {
		t.Errorf("function library: got %v, want ErrFunctionLibrary", err)
	}
}

// scriptSHA matches the part of a script error that names the script.
var scriptSHA = regexp.MustCompile(`script: [0-9a-f]{40}`)

func TestVirtualTimeErrorLines(t *testing.T) {
	key := srv.Key(t)
	if err := srv.Client().HSet(t.Context(), key, "f", "1").Err(); err != nil {
		t.Fatal(err)
	}
	bodies := []struct {
		name string
		body string // the error is on the body's line 3
	}{
		{"Lua error", "local a = 1\nlocal b = redis.call('TIME')\nlocal c = nil + a\nreturn c"},
		{"unknown command", "local a = 1\nlocal b = redis.call('TIME')\nreturn redis.call('NOPE')"},
		{"wrong type", "local a = 1\nlocal b = 2\nreturn redis.call('INCR', KEYS[1])"},
		{"wrong arity, pcall re-raised", "local a = 1\nlocal b = 2\nlocal r = redis.pcall('SET') error(r)"},
		{"error()", "local a = 1\nlocal b = 2\nerror('boom')"},
	}
	for _, b := range bodies {
		for _, shebang := range []string{"", "#!lua flags=no-writes\n", "#!lua\n"} {
			src := shebang + b.body
			line := 3 + strings.Count(shebang, "\n")
			_, want := srv.Client().Eval(t.Context(), src, []string{key}).Result()
			_, got := evalAt(t, rewrite(t, src), vt0, []string{key})
			if want == nil || got == nil {
				t.Fatalf("%s (shebang %q): errors %v and %v, want both", b.name, shebang, want, got)
			}
			w, g := scriptSHA.ReplaceAllString(want.Error(), "script: SHA"), scriptSHA.ReplaceAllString(got.Error(), "script: SHA")
			if w != g {
				t.Errorf("%s (shebang %q):\n got %s\nwant %s", b.name, shebang, g, w)
			}
			if at := fmt.Sprintf("@user_script:%d.", line); !strings.Contains(g, at) {
				t.Errorf("%s (shebang %q): %s does not say %s", b.name, shebang, g, at)
			}
		}
	}
	// Known limit, kept visible: a command error from a call whose command is
	// not a literal comes from the wrapper, on the prefix's line (line 1).
	_, err := evalAt(t, rewrite(t, "local c = 'NOPE'\nlocal b = 2\nreturn redis.call(c)"), vt0, nil)
	if err == nil || !strings.Contains(err.Error(), "@user_script:1.") {
		t.Errorf("dynamic command error: got %v, want it on user_script:1", err)
	}
}

func TestVirtualTimeEvalSha(t *testing.T) {
	const src = "return redis.call('TIME')"
	vt := rewrite(t, src)
	s := redis.NewScript(vt.Source)
	if s.Hash() == redis.NewScript(src).Hash() {
		t.Fatal("rewritten script has the original's SHA1")
	}
	if err := s.Load(t.Context(), srv.Client()).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.EvalSha(t.Context(), srv.Client(), nil, vt.Args(vt0)...).Result()
	if err != nil || fmt.Sprint(got) != fmt.Sprint(timePair(vt0)) {
		t.Errorf("EVALSHA: got %v, %v, want %v", got, err, timePair(vt0))
	}
}

// slidingLog is a sliding-window log in the style of the seed scripts,
// written for this test. KEYS[1]: the log (ZSET, score = µs). ARGV: window
// (µs), limit, request id. NOW is replaced by the clock expression. Reply:
// {allowed 0|1, requests in the window after the decision}.
const slidingLog = `local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = NOW
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local n = redis.call('ZCARD', key)
if n >= limit then
  return {0, n}
end
redis.call('ZADD', key, now, ARGV[3])
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return {1, n + 1}
`

func TestVirtualTimeSlidingLog(t *testing.T) {
	byTime := rewrite(t, strings.Replace(slidingLog, "NOW", "(function() local t = redis.call('TIME') return t[1] * 1000000 + t[2] end)()", 1))
	if byTime.Resolution != time.Microsecond || byTime.TimeCalls != 1 {
		t.Errorf("resolution %v, TIME calls %d: want 1µs, 1", byTime.Resolution, byTime.TimeCalls)
	}
	byArg := strings.Replace(slidingLog, "NOW", "tonumber(ARGV[4])", 1)
	kTime, kArg := srv.Key(t), srv.Key(t)
	const limit, window = 5, int64(time.Second / time.Microsecond)
	r := rand.New(rand.NewPCG(1, 2))
	now := vt0
	var accepted []time.Time // Go model
	for i := range 300 {
		now = now.Add(time.Duration(r.Int64N(int64(400*time.Millisecond))) + time.Microsecond)
		id := fmt.Sprint(i)
		got, err := evalAt(t, byTime, now, []string{kTime}, window, limit, id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := srv.Client().Eval(t.Context(), byArg, []string{kArg}, window, limit, id, now.UnixMicro()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d at %v: TIME-based got %v, ARGV-based %v", i, now, got, want)
		}
		in := 0
		for _, a := range accepted {
			if a.After(now.Add(-time.Second)) {
				in++
			}
		}
		model := []any{int64(0), int64(in)}
		if in < limit {
			accepted = append(accepted, now)
			model = []any{int64(1), int64(in + 1)}
		}
		if fmt.Sprint(got) != fmt.Sprint(model) {
			t.Fatalf("step %d at %v: got %v, model %v", i, now, got, model)
		}
	}
}

func TestVirtualTimeScan(t *testing.T) {
	cases := []struct {
		name     string
		src      string
		res      time.Duration
		time     int
		dynamic  int
		absolute string
	}{
		{"no clock", "return redis.call('GET', KEYS[1])", 0, 0, 0, ""},
		{"seconds by index", "local now = tonumber(redis.call('TIME')[1])", time.Second, 1, 0, ""},
		{"seconds via a variable", "local t = redis.call('TIME')\nlocal now = t[1] * 1000\nreturn t[1]", time.Second, 1, 0, ""},
		{"µs", "local t = redis.call('TIME'); local now = t[1] * 1000000 + t[2]", time.Microsecond, 1, 0, ""},
		{"unpack", "local s, us = unpack(redis.call('TIME'))", time.Microsecond, 1, 0, ""},
		{"passed on", "local t = redis.call('TIME'); return f(t)", time.Microsecond, 1, 0, ""},
		{"seconds, but a dynamic call", "local t = redis.call('TIME'); local c = 'GET'; redis.call(c, t[1])", time.Microsecond, 1, 1, ""},
		{"TIME only in comments", "-- redis.call('TIME')[2]\n--[==[ redis.call('TIME') ]==]\nreturn 1", 0, 0, 0, ""},
		{"redis_rate's reuse of now", "local now = redis.call(\"TIME\")\nnow = (now[1] - 1483228800) + (now[2] / 1000000)", time.Microsecond, 1, 0, ""},
		{"EXPIREAT", "redis.call('EXPIREAT', KEYS[1], 5)\nredis.call('pexpireat', KEYS[1], 5)", 0, 0, 0, "line 1: EXPIREAT; line 2: PEXPIREAT"},
		{"SET PXAT", "local x = 1\nredis.call('SET', KEYS[1], 1, 'PXAT', 5)", 0, 0, 0, "line 2: SET ... PXAT"},
		{"GETEX EXAT", "redis.call('GETEX', KEYS[1],\n 'exat', 5)", 0, 0, 0, "line 2: GETEX ... EXAT"},
		{"option in a variable", "local opt = 'PXAT'", 0, 0, 0, "line 1: PXAT (string literal)"},
		{"relative expiry only", "redis.call('SET', KEYS[1], 1, 'PX', 5) redis.call('EXPIRE', KEYS[1], 5) -- EXPIREAT", 0, 0, 0, ""},
		{"shebang counts as line 1", "#!lua\nredis.call('EXPIREAT', KEYS[1], 5)", 0, 0, 0, "line 2: EXPIREAT"},
		{"not the redis global", "local x = {redis = {}}; x.redis.call('TIME')", 0, 0, 0, ""},
	}
	for _, c := range cases {
		vt, err := vclock.Rewrite(c.src, vclock.Options{Time: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var abs []string
		for _, a := range vt.AbsoluteExpiries {
			abs = append(abs, a.String())
		}
		if vt.Resolution != c.res || vt.TimeCalls != c.time || vt.DynamicCalls != c.dynamic || strings.Join(abs, "; ") != c.absolute {
			t.Errorf("%s: got resolution %v, TIME calls %d, dynamic %d, absolute %q; want %v, %d, %d, %q",
				c.name, vt.Resolution, vt.TimeCalls, vt.DynamicCalls, strings.Join(abs, "; "), c.res, c.time, c.dynamic, c.absolute)
		}
		found, err := vclock.FindAbsoluteExpiries(c.src)
		if err != nil || fmt.Sprint(found) != fmt.Sprint(vt.AbsoluteExpiries) {
			t.Errorf("%s: FindAbsoluteExpiries %v, %v; Rewrite %v", c.name, found, err, vt.AbsoluteExpiries)
		}
		if strings.Count(vt.Source, "\n") != strings.Count(c.src, "\n") {
			t.Errorf("%s: the rewrite changed the number of lines", c.name)
		}
	}
	for _, bad := range []string{"return 'abc", "--[[ open", "return [==[ x ]]"} {
		if _, err := vclock.Rewrite(bad, vclock.Options{Time: true}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestVirtualTimeArg(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Unix(0, 0), "0000000"},
		{time.Unix(0, 5000), "0000005"},
		{time.Unix(1795424251, 312450999), "1795424251312450"}, // truncated to µs
		{time.Unix(-1, 0), "-1000000"},
	} {
		if got := vclock.TimeArg(c.t); got != c.want {
			t.Errorf("VirtualTimeArg(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	vt := rewrite(t, "return redis.call('TIME')")
	if _, err := srv.Client().Eval(t.Context(), vt.Source, nil, vt.Args(time.Unix(-1, 0))...).Result(); err == nil {
		t.Error("a time before the epoch: no error")
	}
}

// A script that reads Redis TIME, run at a virtual instant: the rewritten
// script takes the time as one more, last ARGV.
func ExampleRewrite() {
	vt, err := vclock.Rewrite("local t = redis.call('TIME')\nreturn {t[1], t[2], #ARGV}", vclock.Options{Time: true})
	if err != nil {
		panic(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 42_000, time.UTC)
	reply, err := srv.Client().Eval(context.Background(), vt.Source, nil, vt.Args(now, "user-arg")...).Result()
	fmt.Println(reply, err, vt.Resolution)
	// Output: [1893456000 42 1] <nil> 1µs
}
