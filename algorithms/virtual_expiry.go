package algorithms

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key expiry on the virtual clock, inside the call.
//
// WithVirtualExpiry rewrites a script (on top of WithVirtualTime's rewrite
// when the script reads TIME) so that one EVALSHA both decides and emulates
// key expiry at the call's virtual time, the way Redis would expire keys on
// a server whose clock read that time. The caller appends one key (the
// companion hash of the call's hash tag, where the virtual deadlines live)
// and three arguments (the tracked prefix, the virtual time in ms, a safety
// TTL in ms: ExpiryCall); the script pops them, as it pops the virtual
// time, so KEYS and ARGV read as without them. Line numbers are kept: the
// prefix goes on the body's first line, the body runs as a function
// (errors raised in it keep their text and line, measured on Redis 7.0.15:
// a command error reads "... on @user_script:3." whether the call is made
// at chunk level or in a function), and the function's end and the suffix
// go on a new last line.
//
//   - Before the body: Redis's real clock T0 (TIME, ms) and the offset
//     off = T0 - vnow map virtual to real instants. Every tracked key of the
//     companion whose virtual deadline has passed (vnow > deadline, as Redis
//     expires: gone once now_ms > when_ms) is removed (UNLINK); every other
//     tracked key gets the real expiry deadline + off, so TTL and PTTL
//     read the virtual remainder natively (a remainder under 2 ms is set
//     relative to Redis's live clock, at least 1 ms: Redis 7.0 deletes at
//     once a key given an expiry at or before its live clock, which may
//     have ticked past T0); a tracked key with no deadline is made
//     persistent again.
//   - In the body: every redis.call / redis.pcall notes the string
//     arguments that start with the tracked prefix (the first always, all
//     of them for calls of at most 17 arguments): those are the keys the
//     call touched, no SCAN. The absolute expiries are translated by off:
//     EXPIREAT and PEXPIREAT (sent as PEXPIREAT), SET and GETEX ... EXAT
//     and PXAT (sent as PXAT), RESTORE ... ABSTTL; EXPIRETIME and
//     PEXPIRETIME answer virtual instants (EXPIRETIME rounded as Redis
//     rounds it). KEEPTTL, GETEX, PERSIST, the NX/XX/GT/LT options and
//     relative expiries then behave natively. Literal call sites are
//     rewritten in place, redis.call('INCR', k) becoming
//     __ratelab_call(__ratelab_xn('INCR', k)) on the same line, so command
//     errors keep their line; a literal EXPIRETIME / PEXPIRETIME, and calls
//     whose command is not a literal, go through a wrapper whose errors
//     report the first code line.
//   - After the body: for every tracked or touched key, PEXPIRETIME - off
//     is its virtual deadline (none when it has no TTL; no longer tracked
//     when gone), stored in the companion when it changed; a key the body
//     left alone keeps its deadline exactly. Then the key and the companion
//     get the real safety TTL (T0 + safety): nothing ratelab writes is left
//     without an end, and none vanishes on the real clock during a command
//     whose life the safety TTL covers.
//
// Soundness: a key never vanishes earlier than Redis would remove it. A TTL
// the body sets counts from Redis's live clock, which Redis 7.0 does not
// freeze inside a script (measured: a PEXPIRE after 14 ms of Lua counts from
// 14 ms after TIME), so a deadline is late by the milliseconds the script
// ran before it, never early; PTTL read in the body is short by the same.
// Keys are not expired in the middle of a script (Redis freezes key expiry
// there), so nothing tracked vanishes mid-call.
//
// Not covered: keys outside the tracked prefix (they keep real TTLs); a
// script with "#!lua flags=no-writes" (the emulation writes); function
// libraries (ErrFunctionLibrary).

// Names the expiry prefix declares, besides those of virtualTimePrefix.
const (
	xBody = "__ratelab_body"
	xCall = "__ratelab_tcall" // the wrapper: translate, note, call, translate back
	xPcal = "__ratelab_tpcall"
	xNote = "__ratelab_xn" // notes keys, passes the arguments through
	xAbs  = "__ratelab_xa" // notes keys, translates absolute expiries
)

// absoluteCommands are the commands whose arguments or reply hold absolute
// expiry instants (or may: SET and GETEX options, RESTORE ABSTTL).
var absoluteCommands = map[string]bool{"EXPIREAT": true, "PEXPIREAT": true, "SET": true, "GETEX": true,
	"RESTORE": true, "EXPIRETIME": true, "PEXPIRETIME": true}

// expiryPrefix is the one-line prefix of WithVirtualExpiry (withTime: the
// script's TIME answers the virtual time too, as with WithVirtualTime).
func expiryPrefix(withTime bool) string {
	l := []string{
		"local __ratelab_xc = KEYS[#KEYS]; KEYS[#KEYS] = nil;",
		"local __ratelab_xs = tonumber(ARGV[#ARGV]); ARGV[#ARGV] = nil;",
		"local __ratelab_xv = tonumber(ARGV[#ARGV]); ARGV[#ARGV] = nil;",
		"local __ratelab_xp = ARGV[#ARGV]; ARGV[#ARGV] = nil;",
		"if not (__ratelab_xc and __ratelab_xs and __ratelab_xv and __ratelab_xp) then return redis.error_reply('ERR ratelab key expiry: the last key must be the companion hash and the last three ARGV the tracked prefix, the virtual time (ms) and the safety TTL (ms)') end;",
	}
	if withTime {
		l = append(l, vtPop...)
	}
	l = append(l,
		"local "+vtCall+", "+vtPcall+" = redis.call, redis.pcall;",
		"local __ratelab_t0 = "+vtCall+"('TIME'); __ratelab_t0 = tonumber(__ratelab_t0[1]) * 1000 + math.floor(tonumber(__ratelab_t0[2]) / 1000);",
		"local __ratelab_off = __ratelab_t0 - __ratelab_xv;",
		"local __ratelab_xl = #__ratelab_xp;",
		"local __ratelab_d, __ratelab_s, __ratelab_n, __ratelab_pend = {}, {}, {}, nil;",
		"do local f = "+vtCall+"('HGETALL', __ratelab_xc); for i = 1, #f, 2 do local k, v = f[i], f[i + 1];",
		"if v == 'none' then if "+vtCall+"('PERSIST', k) == 1 then __ratelab_d[k] = v else "+vtCall+"('HDEL', __ratelab_xc, k) end",
		"elseif __ratelab_xv > tonumber(v) then "+vtCall+"('UNLINK', k); "+vtCall+"('HDEL', __ratelab_xc, k)",
		"else local r, at = tonumber(v) - __ratelab_xv, nil;",
		"if r >= 2 then if "+vtCall+"('PEXPIREAT', k, string.format('%d', __ratelab_t0 + r)) == 1 then at = __ratelab_t0 + r end",
		"elseif "+vtCall+"('PEXPIRE', k, math.max(r, 1)) == 1 then at = "+vtCall+"('PEXPIRETIME', k) end;",
		"if at then __ratelab_d[k], __ratelab_s[k] = v, at else "+vtCall+"('HDEL', __ratelab_xc, k) end end end end;",
		"local function __ratelab_note(a) if type(a) == 'string' and string.sub(a, 1, __ratelab_xl) == __ratelab_xp then __ratelab_n[a] = true end end;",
		"local function "+xNote+"(cmd, ...) local m = select('#', ...); if m > 0 then __ratelab_note((...)); if m <= 16 then for i = 2, m do __ratelab_note((select(i, ...))) end end end; return cmd, ... end;",
		"local function __ratelab_ms(v, unit, floor) local x = tonumber(v); if x == nil or x ~= math.floor(x) or math.abs(x) > 1e15 then return nil end; x = x * unit + __ratelab_off; if floor and x < 1 then x = 1 end; return string.format('%d', x) end;",
		"local function "+xAbs+"(cmd, ...) "+xNote+"(cmd, ...); local a, m, u = {...}, select('#', ...), string.upper(cmd); __ratelab_pend = nil;",
		"if u == 'EXPIREAT' or u == 'PEXPIREAT' then local t = __ratelab_ms(a[2], u == 'EXPIREAT' and 1000 or 1); if t then cmd, a[2] = 'PEXPIREAT', t end",
		"elseif u == 'SET' or u == 'GETEX' then for i = (u == 'SET' and 3 or 2), m - 1 do local o = type(a[i]) == 'string' and string.upper(a[i]);",
		"if o == 'EXAT' or o == 'PXAT' then local t = __ratelab_ms(a[i + 1], o == 'EXAT' and 1000 or 1, true); if t then a[i], a[i + 1] = 'PXAT', t end end end",
		"elseif u == 'RESTORE' then for i = 4, m do if type(a[i]) == 'string' and string.upper(a[i]) == 'ABSTTL' and (tonumber(a[2]) or 0) > 0 then a[2] = __ratelab_ms(a[2], 1, true) or a[2] end end",
		"elseif u == 'EXPIRETIME' then cmd, __ratelab_pend = 'PEXPIRETIME', 1000 elseif u == 'PEXPIRETIME' then __ratelab_pend = 1 end;",
		"return cmd, unpack(a, 1, m) end;",
		"local function __ratelab_xr(v) local p = __ratelab_pend; __ratelab_pend = nil; if p and type(v) == 'number' and v >= 0 then if p == 1 then return v - __ratelab_off end; return math.floor((v - __ratelab_off + 500) / 1000) end; return v end;",
		"local __ratelab_abs = {EXPIREAT = 1, PEXPIREAT = 1, SET = 1, GETEX = 1, RESTORE = 1, EXPIRETIME = 1, PEXPIRETIME = 1};",
		"local function __ratelab_xd(cmd, ...) if type(cmd) == 'string' and __ratelab_abs[string.upper(cmd)] then return "+xAbs+"(cmd, ...) end; __ratelab_pend = nil; return "+xNote+"(cmd, ...) end;",
		"local function "+xCall+"(...) return __ratelab_xr("+vtCall+"(__ratelab_xd(...))) end;",
		"local function "+xPcal+"(...) return __ratelab_xr("+vtPcall+"(__ratelab_xd(...))) end;",
	)
	call, pcall := "call = function(cmd, ...) ", "pcall = function(cmd, ...) "
	if withTime {
		l = append(l, "local function "+vtTime+"(cmd) return type(cmd) == 'string' and string.upper(cmd) == 'TIME' end;")
		call += "if " + vtTime + "(cmd) then return {" + vtSec + ", " + vtUsec + "} end "
		pcall += "if " + vtTime + "(cmd) then return {" + vtSec + ", " + vtUsec + "} end "
	}
	l = append(l, "local redis = setmetatable({",
		call+"return "+xCall+"(cmd, ...) end,",
		pcall+"return "+xPcal+"(cmd, ...) end",
		"}, {__index = redis});",
		"local function "+xBody+"(...) ")
	return strings.Join(l, " ")
}

// expirySuffix ends the body's function on a new line, runs it, records the
// deadlines and sets the safety TTLs (see the comment above).
var expirySuffix = strings.Join([]string{
	"\nend; local __ratelab_r = " + xBody + "();",
	"for i = 1, #KEYS do __ratelab_note(KEYS[i]) end; for k in pairs(__ratelab_d) do __ratelab_n[k] = true end;",
	"do local hs, safe = {}, string.format('%d', __ratelab_t0 + __ratelab_xs); for k in pairs(__ratelab_n) do",
	"local px = " + vtCall + "('PEXPIRETIME', k);",
	"if px == -2 then if __ratelab_d[k] then " + vtCall + "('HDEL', __ratelab_xc, k) end",
	"else local v = 'none'; if px >= 0 then if px == __ratelab_s[k] then v = __ratelab_d[k] else v = string.format('%d', px - __ratelab_off) end end;",
	"if __ratelab_d[k] ~= v then hs[#hs + 1] = k; hs[#hs + 1] = v end; " + vtCall + "('PEXPIREAT', k, safe) end end;",
	"if #hs > 0 then " + vtCall + "('HSET', __ratelab_xc, unpack(hs)) end; " + vtCall + "('PEXPIREAT', __ratelab_xc, safe) end;",
	"return __ratelab_r",
}, " ")

// edit replaces del bytes at pos of the body by text.
type edit struct {
	pos, del int
	text     string
}

// expiryEdits are the edits of literal call site c (command not TIME, on
// one line) under WithVirtualExpiry; real is the real function's name.
func expiryEdits(toks []luaToken, c callSite, real string) []edit {
	wrapper := xCall
	if c.pcall {
		wrapper = xPcal
	}
	cmd := strings.ToUpper(c.cmd)
	open := c.argTok - 1
	if cmd == "EXPIRETIME" || cmd == "PEXPIRETIME" || open <= c.first+2 || !toks[open].is("(") {
		// the reply is translated too (or `redis.call'PING'`): through
		// the wrapper, whose errors report the first line
		return []edit{{pos: c.start, del: c.end - c.start, text: wrapper}}
	}
	fn := xNote
	if absoluteCommands[cmd] {
		fn = xAbs
	}
	return []edit{
		{pos: c.start, del: c.end - c.start, text: real},
		{pos: toks[open].pos + 1, text: fn + "("},
		{pos: toks[c.endTok].pos, text: ")"},
	}
}

// WithVirtualExpiry rewrites src for key expiry on the virtual clock (see
// the comment above), and with withTime also for virtual TIME as
// WithVirtualTime does (the virtual time then comes before ExpiryCall's
// arguments in ARGV). Errors as WithVirtualTime's.
func WithVirtualExpiry(src string, withTime bool) (VirtualTimeScript, error) {
	return rewrite(src, withTime, true)
}

// scriptSource is what a registered script was made from.
type scriptSource struct {
	src      string // the original source
	withTime bool   // the script is src rewritten by WithVirtualTime
	once     sync.Once
	expiry   *redis.Script
	err      error
}

// sources maps a registered script's SHA1 to its *scriptSource.
var sources sync.Map

// registerScript records that s runs src (withTime: src rewritten by
// WithVirtualTime), so that ExpiryCall can rewrite calls of s.
func registerScript(s *redis.Script, src string, withTime bool) *redis.Script {
	sources.LoadOrStore(s.Hash(), &scriptSource{src: src, withTime: withTime})
	return s
}

// newScript is redis.NewScript, registered for ExpiryCall.
func newScript(src string) *redis.Script { return registerScript(redis.NewScript(src), src, false) }

// ExpiryCall returns c rewritten to emulate key expiry at virtual time now
// in the same call (see WithVirtualExpiry): its script rewritten, the
// companion hash appended to its keys and tracked (the prefix of the keys
// to track: the call's tagged key), now (in ms) and safety (the real TTL
// every tracked key and the companion keep after the call, rounded down to
// the ms; at least 1 ms) appended to its arguments. c's own slices are not
// changed. The companion must hash to the slot of c's keys (same hash tag).
// Errors: c's script was not made by this package (a limiter of another
// package: only scripts of the algorithms and ScriptLimiter are known), or
// its source cannot be rewritten (a function library). Safe for concurrent
// use; each script is rewritten once.
func ExpiryCall(c ScriptCall, tracked, companion string, now time.Time, safety time.Duration) (ScriptCall, error) {
	v, ok := sources.Load(c.Script.Hash())
	if !ok {
		return ScriptCall{}, fmt.Errorf("virtual key expiry: script %s is not one of ratelab's (its source is unknown)", c.Script.Hash())
	}
	ss := v.(*scriptSource)
	ss.once.Do(func() {
		vt, err := WithVirtualExpiry(ss.src, ss.withTime)
		if err != nil {
			ss.err = fmt.Errorf("virtual key expiry: %w", err)
			return
		}
		ss.expiry = redis.NewScript(vt.Source)
	})
	if ss.err != nil {
		return ScriptCall{}, ss.err
	}
	out := c
	out.Script = ss.expiry
	out.Keys = append(append(make([]string, 0, len(c.Keys)+1), c.Keys...), companion)
	out.Args = append(append(make([]any, 0, len(c.Args)+3), c.Args...),
		tracked, strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(max(safety.Milliseconds(), 1), 10))
	return out, nil
}
