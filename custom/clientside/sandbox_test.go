package clientside_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/internal/testenv"
)

// show renders the values of an expression list the same way in Redis and
// here: type:value joined by '|'; an error raised inside is "error:" and
// its message without the position.
const show = `local function show(...)
  local out = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    out[#out+1] = type(v) .. ':' .. tostring(v)
  end
  return table.concat(out, '|')
end
local function try(f, ...)
  local r = {pcall(f, ...)}
  if not r[1] then return 'error:' .. string.gsub(tostring(r[2]), '^.-:%d+: ', '') end
  return show(unpack(r, 2, table.maxn(r)))
end
`

// evalBoth runs src (after show) in Redis (EVAL) and here.
func evalBoth(t *testing.T, src string) (redis, here any, herr error) {
	t.Helper()
	redis, err := srv.Client().Eval(ctx, show+src, nil).Result()
	if err != nil {
		redis = "redis error: " + err.Error()
	}
	here, herr = run(t, &clientside.Exec{}, show+src, nil, nil)
	return redis, here, herr
}

// TestSandboxGlobals: a script sees the globals of a Redis 7.0 script and
// no more; a removed one fails as it fails in Redis, with Redis's words.
func TestSandboxGlobals(t *testing.T) {
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "require", "module", "print", "_printregs", "getfenv", "setfenv", "newproxy", "undefined_name"} {
		t.Run(name, func(t *testing.T) {
			src := "return " + name + "('.env')"
			_, err := run(t, &clientside.Exec{}, src, nil, nil)
			want := "Script attempted to access nonexistent global variable '" + name + "'"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: got %v; want an error with %q", src, err, want)
			}
			if strings.Count(err.Error(), "test") != 1 {
				t.Errorf("%s: %q names the script more than once", src, err)
			}
			if name == "load" || name == "loadstring" {
				return // Redis 7.0 has them; the sandbox does not load code
			}
			if _, rerr := srv.Client().Eval(ctx, src, nil).Result(); rerr == nil || !strings.Contains(rerr.Error(), want) {
				t.Errorf("Redis answers %v to %s; want an error with %q", rerr, src, want)
			}
		})
	}
	// what a script has, the same as Redis's
	for _, src := range []string{
		`return show(type(assert), type(error), type(pcall), type(xpcall), type(select), type(tostring), type(tonumber), type(unpack), type(rawget), type(rawset), type(rawequal), type(setmetatable), type(getmetatable), type(next), type(pairs), type(ipairs), type(collectgarbage), _VERSION)`,
		`return show(type(string.rep), type(string.format), type(string.byte), type(table.insert), type(table.sort), type(math.floor), type(math.huge))`,
		`return show(('x'):rep(3), ('abc'):upper(), #string.format('%5.2f', 1/3))`,
	} {
		redis, here, err := evalBoth(t, src)
		if err != nil || here != redis {
			t.Errorf("%s:\n here  %v %v\n Redis %v", src, here, err, redis)
		}
	}
}

// TestPatternsAsRedis: string.find, match, gmatch and gsub answer what
// Redis's Lua answers, captures, anchors, classes, sets, %b, %f and back
// references included, and fail with its messages.
func TestPatternsAsRedis(t *testing.T) {
	for _, expr := range []string{
		`string.find('hello world', 'o w')`,
		`string.find('hello world', 'o', 6)`,
		`string.find('hello', 'l+')`,
		`string.find('hello', '(l)(l)')`,
		`string.find('hello', '()ll()')`,
		`string.find('abc', '', 10)`,
		`string.find('abc', 'b', -1)`,
		`string.find('abc', 'b', -10)`,
		`string.find('a.b', '.', 1, true)`,
		`string.find('a+b', '+', 1, true)`,
		`string.match('key:123:abc', '^(%a+):(%d+):(%a+)$')`,
		`string.match('  trim me  ', '^%s*(.-)%s*$')`,
		`string.match('THE (quick) fox', '%((%a+)%)')`,
		`string.match('f(a(b)c)d', '%b()')`,
		`string.match('THE (quick) fox', '%f[%a]%a+', 5)`,
		`string.match('abab', '(ab)%1')`,
		`string.match('x=1, y=2', '(%w+)=(%w+)')`,
		`string.match('[]]', '[]]+')`,
		`string.match('a-b', '[a%-]+')`,
		`string.match('2024-01-05', '(%d+)-(%d+)-(%d+)')`,
		`string.match('hello', '.-l')`,
		`string.match('hello', '.*l')`,
		`string.match('', '.*')`,
		`string.match('abc', '^b')`,
		`string.match('a$b', '%$')`,
		`string.match('a$b', 'a$b')`,
		`string.match('%', '%%')`,
		`string.match('aaa', 'a-$')`,
		`string.match('ABCdef123', '[%u]+')`,
		`string.match('ABCdef123', '[^%l]+')`,
		`string.match('ABCdef123 x', '%X+')`,
		`string.match('a1 b2', '[a-c]%d')`,
		`string.match('tab\there', '%c')`,
		`string.match('1.5e3!', '%p')`,
		`string.match('key', 'k(e?)y')`,
		`string.match('ky', 'k(e?)y')`,
		`string.match('hello', '()')`,
		`string.match('a\0b', '%z')`,
		`string.gsub('hello world', 'o', '0')`,
		`string.gsub('hello world', 'o', '0', 1)`,
		`string.gsub('hello', '', '-')`,
		`string.gsub('abc', '%w', '%0%0')`,
		`string.gsub('hello world', '(%w+)', '<%1>')`,
		`string.gsub('100%', '%%', ' percent')`,
		`string.gsub('$name is $age', '%$(%w+)', {name='bob', age=3})`,
		`string.gsub('abc', '%w', function(c) return c:upper() .. '.' end)`,
		`string.gsub('abc', '%w', function(c) if c == 'b' then return false end return 'x' end)`,
		`string.gsub('abc', '^a', 'z')`,
		`string.gsub('aaa', '^a', 'z')`,
		`string.gsub('a,b,,c', ',', ';')`,
		`string.gsub('abc', 'b*', '-')`,
		`string.gsub('hello', 'l', 7)`,
		`string.gsub('abc', 'b', 'x%%y%0z%1')`,
		`string.gsub('abcb', '(b)', '[%1%%]')`,
		`(function() local t = {} for k, v in string.gmatch('a=1, b=2', '(%w+)=(%w+)') do t[#t+1] = k .. v end return table.concat(t, ',') end)()`,
		`(function() local n = 0 for w in string.gmatch('abc', 'x*') do n = n + 1 end return n end)()`,
		`(function() local t = {} for w in string.gmatch('one two  three', '%a+') do t[#t+1] = w end return table.concat(t, '/') end)()`,
		`(function() local t = {} for p in string.gmatch('abc', '()') do t[#t+1] = p end return table.concat(t, ',') end)()`,
		`table.concat({1, 'a', 2.5}, ', ')`,
		`table.concat({1, 2, 3}, '-', 2, 3)`,
		`table.concat({}, 'x')`,
		`string.format('%d %5.2f %s %q %x %%', 42, 3.14159, 'str', 'a"b', 255)`,
		`string.format('%-5s|%05d', 'ab', 42)`,
	} {
		redis, here, err := evalBoth(t, "return show("+expr+")")
		if err != nil || here != redis {
			t.Errorf("%s:\n here  %q %v\n Redis %q", expr, here, err, redis)
		}
	}
	for _, call := range []string{
		`string.find, 'a', '[a'`,
		`string.find, 'a', '%'`,
		`string.find, 'a', '(()'`,
		`string.find, 'a', '%1'`,
		`string.find, 'a', 'a)'`,
		`string.find, 'a', '%b'`,
		`string.gsub, 'abc', '(a)', '%2'`,
		`string.gsub, 'abc', 'a', {a = {}}`,
		`string.format, '%100d', 1`,
		`string.format, '%y', 1`,
		`table.concat, {1, {}, 3}`,
	} {
		redis, here, err := evalBoth(t, "return try("+call+")")
		if err != nil || here != redis {
			t.Errorf("pcall(%s):\n here  %q %v\n Redis %q", call, here, err, redis)
		}
	}
}

// TestStringBounds: a string longer than Redis's largest (512 MB) is
// refused before it is built: string.rep(2^33) at once (without the Go
// runtime's out-of-memory crash), a doubling .. loop at its first
// string over the bound, table.concat and string.format likewise.
func TestStringBounds(t *testing.T) {
	testenv.SkipUnderRace(t)
	for _, c := range []struct{ name, src, want string }{
		{"string.rep 2^33", `return #string.rep('x', 2^33)`, "string.rep: the result would be 8589934592 bytes, more than the 536870912"},
		{"string.rep with a long string", `return #string.rep(string.rep('x', 1000), 600000)`, "string.rep: the result would be 600000000 bytes"},
		{"doubling ..", `local s = 'xxx' while true do s = s .. s end`, "..: the result would be 805306368 bytes"},
		{"a chain of ..", `local s = string.rep('x', 200000000) return #(s .. s .. s)`, "..: the result would be 600000000 bytes"},
		{"table.concat", `local s = string.rep('x', 200000000) return #table.concat({s, s, s})`, "table.concat: the result would be"},
		{"string.format", `local s = string.rep('x', 200000000) return #string.format('%s%s%s', s, s, s)`, "string.format: the result would be"},
		{"string.gsub", `local s = string.rep('x', 1000000) return #string.gsub(s, 'x', string.rep('y', 1000))`, "string.gsub: the result would be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := run(t, &clientside.Exec{}, c.src, nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, %v; want an error with %q", got, err, c.want)
			}
		})
	}
	// what Redis takes is built
	if got, err := run(t, &clientside.Exec{}, `local s = 'ab' .. 1 .. 2.5 return #string.rep(s, 1000) .. s`, nil, nil); err != nil || got != "6000ab12.5" {
		t.Errorf("got %v, %v; want 6000ab12.5", got, err)
	}
	// a metamethod still joins tables
	if got, err := run(t, &clientside.Exec{}, `local t = setmetatable({}, {__concat = function(a, b) return 'T' end}) return 'a' .. t .. 'b'`, nil, nil); err != nil || got != "aT" {
		t.Errorf("__concat: got %v, %v; want aT (right to left: t .. 'b' first)", got, err)
	}
	if _, err := run(t, &clientside.Exec{}, `return 'a' .. nil`, nil, nil); err == nil || !strings.Contains(err.Error(), "attempt to concatenate a nil value") {
		t.Errorf("'a' .. nil: got %v; want an error", err)
	}
}

// TestMemoryWatchdog: strings each under the bound but piling up in a
// table stop when the Go heap passes the watchdog's bound.
func TestMemoryWatchdog(t *testing.T) {
	defer clientside.SetHeapLimit(256 << 20)()
	_, err := run(t, &clientside.Exec{}, `local t = {} for i = 1, 1e6 do t[i] = string.rep('x', 2^20) .. i end return #t`, nil, nil)
	var se *clientside.StoppedError
	if !errors.As(err, &se) || !errors.Is(err, clientside.ErrMemory) {
		t.Fatalf("got %v; want a *StoppedError with ErrMemory", err)
	}
}

// TestBudget: the run's ctx stops a script wherever its Lua is: a loop
// between instructions, a pattern that backtracks for ever inside
// string.find, gsub and gmatch, a loop inside a gsub callback. The error
// is a *StoppedError naming the script once, with its line and ctx's
// cause (not a deadline to errors.Is: Redis did not time out).
func TestBudget(t *testing.T) {
	backtrack := `string.rep('a', 30000), '.-.-.-.-.-b'`
	for _, c := range []struct {
		name, src string
		line      int
	}{
		{"loop", "local n = 0\nwhile true do n = n + 1 end", 2},
		{"string.find", "return string.find(" + backtrack + ")", 1},
		{"string.match", "return string.match(" + backtrack + ")", 1},
		{"string.gsub", "return string.gsub(" + backtrack + ", 'x')", 1},
		{"string.gmatch", "for w in string.gmatch(" + backtrack + ") do end", 1},
		{"pcall around a loop", "while true do pcall(function() while true do end end) end", 1},
		{"a loop in a gsub callback", "return string.gsub('abc', '%w', function() while true do end end)", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := clientside.Compile("budget.lua", c.src)
			if err != nil {
				t.Fatal(err)
			}
			conn, closeConn, err := clientside.Dial(ctx, srv.Client(), "x")
			if err != nil {
				t.Fatal(err)
			}
			defer closeConn()
			cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = (&clientside.Exec{Conn: conn}).Run(cctx, s, nil, nil)
			took := time.Since(start)
			var se *clientside.StoppedError
			if !errors.As(err, &se) || !errors.Is(se.Cause, context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v; want a *StoppedError for the deadline", err)
			}
			if took > 2*time.Second {
				t.Errorf("stopped after %s; want about 200ms", took)
			}
			if se.Line != c.line || strings.Count(err.Error(), "budget.lua") != 1 || !strings.Contains(err.Error(), "ran past its call's time bound") {
				t.Errorf("%q (line %d): want the script named once, line %d and the cause", err, se.Line, c.line)
			}
		})
	}
}
