package vclock

import (
	"slices"
	"strconv"
	"strings"
)

// Key expiry on the virtual clock, inside the call.
//
// Rewrite with Expiry rewrites a script (on top of the TIME rewrite
// when the script reads TIME) so that one EVALSHA both decides and emulates
// key expiry at the call's virtual time, the way Redis would expire keys on
// a server whose clock read that time. The caller appends one key (the
// companion hash of the call's hash tag, where the virtual deadlines live)
// and three arguments (the tracked prefix, the virtual time in ms, the
// safety TTL in ms: the expiry call); the script pops them, as it pops the virtual
// time, so KEYS and ARGV read as without them. Line numbers are kept: the
// prefix goes on the body's first line, the body runs as a function
// (errors raised in it keep their text and line, measured on Redis 7.0.15:
// a command error reads "... on @user_script:3." whether the call is made
// at chunk level or in a function), and the function's end and the suffix
// go on a new last line.
//
// There are two forms. The lean one (lean.go) is taken when
// every call site of the script is a literal command that never looks at a
// TTL (the built-in limiters: reads, writes, a plain PEXPIRE key ms): it
// does less per call (no clock read, no TTL given back before the body)
// and ends in the same keys and deadlines. The full one, described here,
// is taken for every other script.
//
//   - Before the body: B, the base Redis counts relative expiries from (its
//     cached clock, which can lag TIME: read back as the companion's
//     PEXPIRETIME minus the safety TTL just set on it), and the offset
//     off = B - vnow map virtual to real instants. Every tracked key of the
//     companion whose virtual deadline has passed (vnow > deadline, as Redis
//     expires: gone once now_ms > when_ms) is removed (UNLINK); every other
//     tracked key gets its virtual remainder plus a shift S (the safety TTL,
//     which the companion gets too) as real TTL; a tracked key with no
//     deadline is made persistent again.
//   - In the body: every redis.call / redis.pcall notes its arguments
//     that start with the tracked prefix: those are the keys the call
//     touched, no SCAN. A literal call site notes its first argument (its
//     key) through a one-argument function wrapped around it; the expiry
//     commands below, those that may give another key a TTL (RENAME,
//     RENAMENX, COPY, MOVE, BITOP, SORT, ...STORE) and calls whose command
//     is not a literal note every argument of a call of up to 17. On those
//     keys every expiry is translated: a
//     relative one (EXPIRE, PEXPIRE, SETEX, PSETEX, SET and GETEX ... EX
//     and PX, RESTORE) gets S added (sent in ms); an absolute one (EXPIREAT,
//     PEXPIREAT, SET and GETEX ... EXAT and PXAT, RESTORE ... ABSTTL) is
//     mapped by off (+ S when it lies after vnow, so a past instant still
//     deletes at once); TTL, PTTL, EXPIRETIME and PEXPIRETIME answer
//     virtual figures (S and off taken off, rounded as Redis rounds).
//     KEEPTTL, GETEX PERSIST, PERSIST, the NX/XX/GT/LT options (everything
//     is shifted alike) then behave natively. These commands, and RENAME,
//     RENAMENX and COPY, mark their keys as given a TTL. Literal call
//     sites are rewritten in place, redis.call('INCR', k) becoming
//     __ratelab_call('INCR', (__ratelab_n[k] == 'n' and k or
//     __ratelab_k(k))) on the same line, so command errors keep their
//     line (siteEdits, the same in the lean form); a literal TTL, PTTL,
//     EXPIRETIME or PEXPIRETIME, and calls whose command is not a
//     literal, go through a wrapper whose errors report the first code
//     line.
//   - After the body: for every tracked or touched key, its virtual
//     deadline: the one it had when the body sent it no command that may
//     set or clear a TTL (no command at all), else from PEXPIRETIME: none
//     when it has no TTL, no longer tracked when gone, else PEXPIRETIME -
//     off - S; stored in the companion when it changed. A key with no
//     deadline gets the safety TTL as real TTL (the next call makes it
//     persistent again); so do the others whose remainder + S is longer
//     (every key with a deadline still ahead: the next call's prefix gives
//     it remainder + S back before the body runs, so the body reads the
//     virtual TTLs it would without the cap). So nothing ratelab writes is
//     left with a real TTL longer than the safety TTL between calls (a
//     fixed window of 24 h whose keys carry 48 h has them end with the
//     command's bound, not 48 h past it), none without one, and none
//     vanishes on the real clock during a command whose life the safety
//     TTL covers.
//
// Why the shift, measured on Redis 7.0.15: Redis deletes a key at once when
// an expiry it is given is at or before its live clock, but counts relative
// expiries from a cached clock; a PEXPIRE 1 deleted its key in 1 of 30
// tries at the end of a ms, and a verify on this loaded machine lost a
// sliding log to a PEXPIRE 10 after the script was descheduled for 14 ms
// between two commands (a false alarm). With every real expiry S (at least
// 1 ms, in practice 10 minutes or more) past its virtual one, no stall
// shorter than S can do that.
//
// Soundness: a key never vanishes earlier than Redis would remove it. The
// cached clock may move during a script (a ms tick, or Redis's own
// long-script hook), so a TTL the body sets may count from a ms or more
// after B: its deadline is then late by that much, never early; TTL and
// PTTL read in the body may be short by the time the call has run. Keys
// are not expired in the middle of a script (Redis freezes key expiry
// there), so nothing tracked vanishes mid-call.
//
// Not covered: keys outside the tracked prefix (a key of another hash tag
// than the call's) do not expire in virtual time; their relative expiries
// (EXPIRE, PEXPIRE, SETEX, PSETEX, SET and GETEX ... EX and PX, RESTORE)
// get S added and TTL and PTTL take it off again, in both forms, so they
// do not expire on the wall clock during the command either: whether such
// a key is there never depends on how long the calls took (their absolute
// expiries are sent as they are). A script with "#!lua flags=no-writes"
// (the emulation writes); function libraries (ErrFunctionLibrary).

// Names the expiry prefixes declare, besides those of the TIME rewrite.
const (
	xBody = "__ratelab_body"
	xCall = "__ratelab_tcall" // the wrapper: translate, note, call, translate back
	xPcal = "__ratelab_tpcall"
	xNote = "__ratelab_xn" // notes keys, passes the arguments through
	xSet  = "__ratelab_xt" // the same, for a command that may set a TTL
	// xKey notes its one argument (a call's first), xKeySet also marks it
	// as given or cleared a TTL; both return it
	xKey    = "__ratelab_k"
	xKeySet = "__ratelab_ks"
	xAbs    = "__ratelab_xa" // notes keys, translates absolute expiries
)

// shiftCommands are the commands whose expiry arguments are translated
// (relative ones shifted, absolute ones mapped between the clocks), and
// replyCommands those whose reply is.
var (
	shiftCommands = map[string]bool{"EXPIRE": true, "PEXPIRE": true, "EXPIREAT": true, "PEXPIREAT": true,
		"SET": true, "SETEX": true, "PSETEX": true, "GETEX": true, "RESTORE": true}
	replyCommands = map[string]bool{"TTL": true, "PTTL": true, "EXPIRETIME": true, "PEXPIRETIME": true}
	// ttlCommands may remove their first key's TTL; destCommands may give
	// another key than the first a TTL or remove it (so may every command
	// whose name ends in STORE: its destination is replaced)
	ttlCommands  = map[string]bool{"PERSIST": true, "GETSET": true, "DEL": true, "UNLINK": true, "GETDEL": true}
	destCommands = map[string]bool{"RENAME": true, "RENAMENX": true, "COPY": true, "MOVE": true, "BITOP": true, "SORT": true}
)

// expiryPop reads the expiry call's key and arguments off KEYS and ARGV
// and takes them off: always when maxKey or maxArg is negative or withTime
// is set (the virtual time is popped after them), else only when the call
// has fewer keys than maxKey or fewer arguments than maxArg of its own
// (else the body, which reads KEYS and ARGV only as KEYS[n] and ARGV[n] up
// to those, cannot see them: see argIndexes).
func expiryPop(maxKey, maxArg int, withTime bool) []string {
	pop := "KEYS[__ratelab_nk] = nil; ARGV[__ratelab_na] = nil; ARGV[__ratelab_na - 1] = nil; ARGV[__ratelab_na - 2] = nil;"
	if maxKey >= 0 && maxArg >= 0 && !withTime {
		pop = "if __ratelab_nk - 1 < " + strconv.Itoa(maxKey) + " or __ratelab_na - 3 < " + strconv.Itoa(maxArg) + " then " + pop + " end;"
	}
	l := []string{
		"local __ratelab_nk, __ratelab_na = #KEYS, #ARGV;",
		"local __ratelab_xc, __ratelab_xp, __ratelab_xv, __ratelab_xs = KEYS[__ratelab_nk], ARGV[__ratelab_na - 2], tonumber(ARGV[__ratelab_na - 1]), ARGV[__ratelab_na];",
		"if not (__ratelab_xc and __ratelab_xp and __ratelab_xv and tonumber(__ratelab_xs)) then return redis.error_reply('" + expiryArgsError + "') end;",
		pop,
	}
	if withTime {
		l = append(l, vtPop...)
	}
	return append(l, "local "+vtCall+", "+vtPcall+" = redis.call, redis.pcall;")
}

// expiryArgsError is the error reply of a call without the expiry call's key
// and arguments.
const expiryArgsError = "ERR ratelab key expiry: the last key must be the companion hash and the last three ARGV the tracked prefix, the virtual time (ms) and the safety TTL (ms)"

// noteHelpers declare the table of the keys the body notes and the
// functions that note them, those of xKey, xKeySet, xNote, xSet and
// xVTime that uses reports, in both forms.
//
// n, the keys noted: 'n' touched, 's' sent a command that may set or clear
// a TTL; in the lean form also a number, the deadline its last lean
// (P)EXPIRE that Redis answered 1 gave it, or 'x', a TTL that one gave it
// without a deadline to name (or it removed the key). lk: the key of the
// last lean (P)EXPIRE with a deadline when no command after it can have
// changed its TTL (cleared by every helper call and lean (P)EXPIRE: a site
// skips the helper only for a name or KEYS[n] already noted 'n', see
// siteEdits). nn: how many keys were noted (the lean suffix counts down
// those the companion tracks).
func noteHelpers(uses func(name string) bool) []string {
	l := []string{"local __ratelab_lk, __ratelab_n, __ratelab_nn = nil, {}, 0;"}
	if uses(xKey) {
		l = append(l, "local function "+xKey+"(a) __ratelab_lk = nil; if __ratelab_n[a] == nil and "+tracked("a")+" then __ratelab_n[a] = 'n'; __ratelab_nn = __ratelab_nn + 1 end; return a end;")
	}
	if uses(xKeySet) {
		l = append(l, "local function "+xKeySet+"(a) __ratelab_lk = nil; if "+tracked("a")+" then local s = __ratelab_n[a]; if s == nil then __ratelab_nn = __ratelab_nn + 1 end; if s == nil or s == 'n' then __ratelab_n[a] = 's' end end; return a end;")
	}
	if uses(xNote) || uses(xSet) {
		l = append(l,
			"local function __ratelab_args(set, m, ...) __ratelab_lk = nil; for i = 1, (m <= 16 and m or 1) do local a = (select(i, ...));",
			"if "+tracked("a")+" then local s = __ratelab_n[a]; if s == nil then __ratelab_nn = __ratelab_nn + 1 end; if s == nil or (set and s == 'n') then __ratelab_n[a] = set and 's' or 'n' end end end end;",
			"local function "+xNote+"(cmd, ...) __ratelab_args(false, select('#', ...), ...); return cmd, ... end;",
			"local function "+xSet+"(cmd, ...) __ratelab_args(true, select('#', ...), ...); return cmd, ... end;",
		)
	}
	if uses(xVTime) {
		l = append(l, "local function "+xVTime+"() return {"+vtSec+", "+vtUsec+"} end;")
	}
	return l
}

// tracked is the Lua test that a is a key of the tracked prefix.
func tracked(a string) string {
	return "(" + a + " == __ratelab_xp or type(" + a + ") == 'string' and string.sub(" + a + ", 1, #__ratelab_xp) == __ratelab_xp)"
}

// bodyFunction opens the function the body runs in: vararg when the body
// has "..." anywhere, else without parameters (a vararg function that does
// not use "..." makes a table, arg, at every call; and arg is then a
// local, which it is not in a chunk).
func bodyFunction(vararg bool) string {
	if vararg {
		return "local function " + xBody + "(...) "
	}
	return "local function " + xBody + "() "
}

// expiryPrefix is the one-line prefix of the full expiry form (withTime: the
// script's TIME answers the virtual time too, as with the TIME rewrite;
// vararg: see bodyFunction).
func expiryPrefix(withTime, vararg bool) string {
	return strings.Join(append(expiryStatements(withTime), bodyFunction(vararg)), " ")
}

// expiryStatements are expiryPrefix's statements but the body's function.
func expiryStatements(withTime bool) []string {
	c := vtCall
	l := expiryPop(-1, -1, withTime)
	l = append(l, noteHelpers(func(name string) bool { return name != xVTime || withTime })...)
	l = append(l,
		"local __ratelab_m, __ratelab_xl = tonumber(__ratelab_xs), #__ratelab_xp;",
		"local __ratelab_d, __ratelab_pend = {}, nil;",
		// the base of relative expiries (Redis's cached clock), read back
		"local __ratelab_f = "+c+"('HGETALL', __ratelab_xc); if #__ratelab_f == 0 then "+c+"('HSET', __ratelab_xc, '', '') end;",
		c+"('PEXPIRE', __ratelab_xc, __ratelab_xs); local __ratelab_t0 = "+c+"('PEXPIRETIME', __ratelab_xc) - __ratelab_m;",
		"local __ratelab_off = __ratelab_t0 - __ratelab_xv;",
		"for i = 1, #__ratelab_f, 2 do local k, v = __ratelab_f[i], __ratelab_f[i + 1]; if k ~= '' then",
		"if v == 'none' then if "+c+"('PERSIST', k) == 1 then __ratelab_d[k] = v else "+c+"('HDEL', __ratelab_xc, k) end",
		"elseif __ratelab_xv > tonumber(v) then "+c+"('UNLINK', k); "+c+"('HDEL', __ratelab_xc, k)",
		"elseif "+c+"('PEXPIRE', k, string.format('%d', tonumber(v) - __ratelab_xv + __ratelab_m)) == 1 then __ratelab_d[k] = v",
		"else "+c+"('HDEL', __ratelab_xc, k) end end end; __ratelab_f = nil;",
		"local function __ratelab_int(v) local x = tonumber(v); if x == nil or x ~= math.floor(x) or math.abs(x) > 1e15 then return nil end; return x end;",
		"local function __ratelab_rel(v, unit) local x = __ratelab_int(v); if x == nil or x <= 0 then return nil end; return string.format('%d', x * unit + __ratelab_m) end;",
		"local function __ratelab_abs(v, unit) local x = __ratelab_int(v); if x == nil then return nil end; x = x * unit; if x > __ratelab_xv then x = x + __ratelab_m end; return string.format('%d', math.max(x + __ratelab_off, 1)) end;",
		"local function "+xAbs+"(cmd, ...) local a, m, u = {...}, select('#', ...), string.upper(cmd); __ratelab_pend = nil;",
		"local read = u == 'TTL' or u == 'PTTL' or u == 'EXPIRETIME' or u == 'PEXPIRETIME'; __ratelab_args(not read, m, ...);",
		// a key outside the tracked prefix: its relative expiries shifted
		// and read back (it never ends on the wall clock during the
		// command), its absolute ones as sent
		"local tk = type(a[1]) == 'string' and string.sub(a[1], 1, __ratelab_xl) == __ratelab_xp; if not tk and (u == 'EXPIREAT' or u == 'PEXPIREAT' or u == 'EXPIRETIME' or u == 'PEXPIRETIME') then return cmd, ... end;",
		"if u == 'EXPIRE' or u == 'PEXPIRE' then local t = __ratelab_rel(a[2], u == 'EXPIRE' and 1000 or 1); if t then cmd, a[2] = 'PEXPIRE', t end",
		"elseif u == 'SETEX' or u == 'PSETEX' then local t = __ratelab_rel(a[2], u == 'SETEX' and 1000 or 1); if t then cmd, a[2] = 'PSETEX', t end",
		"elseif u == 'EXPIREAT' or u == 'PEXPIREAT' then local t = __ratelab_abs(a[2], u == 'EXPIREAT' and 1000 or 1); if t then cmd, a[2] = 'PEXPIREAT', t end",
		"elseif u == 'SET' or u == 'GETEX' then for i = (u == 'SET' and 3 or 2), m - 1 do local o, t = type(a[i]) == 'string' and string.upper(a[i]), nil;",
		"if o == 'EX' or o == 'PX' then t = __ratelab_rel(a[i + 1], o == 'EX' and 1000 or 1); if t then a[i], a[i + 1] = 'PX', t end",
		"elseif tk and (o == 'EXAT' or o == 'PXAT') then t = __ratelab_abs(a[i + 1], o == 'EXAT' and 1000 or 1); if t then a[i], a[i + 1] = 'PXAT', t end end end",
		"elseif u == 'RESTORE' then local abs = false; for i = 4, m do if type(a[i]) == 'string' and string.upper(a[i]) == 'ABSTTL' then abs = true end end;",
		"if (tonumber(a[2]) or 0) > 0 and (tk or not abs) then a[2] = (abs and __ratelab_abs(a[2], 1) or __ratelab_rel(a[2], 1)) or a[2] end",
		"elseif u == 'TTL' then cmd, __ratelab_pend = 'PTTL', 'ttl' elseif u == 'EXPIRETIME' then cmd, __ratelab_pend = 'PEXPIRETIME', 'et'",
		"elseif u == 'PTTL' or u == 'PEXPIRETIME' then __ratelab_pend = u end;",
		"return cmd, unpack(a, 1, m) end;",
		"local function __ratelab_xr(v) local p = __ratelab_pend; __ratelab_pend = nil; if p == nil or type(v) ~= 'number' or v < 0 then return v end;",
		"if p == 'PTTL' then return math.max(v - __ratelab_m, 0) elseif p == 'ttl' then return math.floor((math.max(v - __ratelab_m, 0) + 500) / 1000)",
		"elseif p == 'PEXPIRETIME' then return v - __ratelab_off - __ratelab_m end; return math.floor((v - __ratelab_off - __ratelab_m + 500) / 1000) end;",
		"local __ratelab_x, __ratelab_t;",
		"local function __ratelab_xd(cmd, ...) __ratelab_pend = nil; if type(cmd) ~= 'string' then return "+xNote+"(cmd, ...) end; local u = string.upper(cmd);",
		"if not __ratelab_x then __ratelab_x, __ratelab_t = {"+luaSet(shiftCommands)+", "+luaSet(replyCommands)+"}, {"+luaSet(ttlCommands)+", "+luaSet(destCommands)+"} end;",
		"if __ratelab_x[u] then return "+xAbs+"(cmd, ...) elseif __ratelab_t[u] or string.sub(u, -5) == 'STORE' then return "+xSet+"(cmd, ...) end; return "+xNote+"(cmd, ...) end;",
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
		"}, {__index = redis});")
	return l
}

// luaSet renders the keys of m as a Lua table constructor's fields, in
// sorted order: "EXPIRE = 1, PEXPIRE = 1".
func luaSet(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k+" = 1")
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}

// expirySuffix ends the body's function on a new line, runs it, records the
// deadlines and sets the safety TTLs (see the comment above).
var expirySuffix = "\nend; local __ratelab_r = " + xBody + "(); " + expiryRecord + " return __ratelab_r"

// expiryRecord is the part of expirySuffix that records the deadlines
// and sets the safety TTLs, after the body ran.
var expiryRecord = strings.Join([]string{
	"for i = 1, #KEYS do " + xKey + "(KEYS[i]) end; for k in pairs(__ratelab_d) do __ratelab_n[k] = __ratelab_n[k] or 'n' end;",
	"do local hs = {}; for k, s in pairs(__ratelab_n) do local d, v, set = __ratelab_d[k], nil, s == 's';",
	"if d and d ~= 'none' and not set then v = d",
	"elseif d == 'none' and not set then if " + vtCall + "('PEXPIRE', k, __ratelab_xs) == 1 then v = d end",
	"else local px = " + vtCall + "('PEXPIRETIME', k);",
	"if px == -1 then v = 'none'; " + vtCall + "('PEXPIRE', k, __ratelab_xs) elseif px >= 0 then v = string.format('%d', px - __ratelab_off - __ratelab_m) end end;",
	"if v == nil then if d then " + vtCall + "('HDEL', __ratelab_xc, k) end elseif d ~= v then hs[#hs + 1] = k; hs[#hs + 1] = v end;",
	// the cap: no real TTL past the safety TTL between calls (the next
	// call's prefix gives the key its remainder + S back first)
	"if v and v ~= 'none' and tonumber(v) > __ratelab_xv then " + vtCall + "('PEXPIRE', k, __ratelab_xs) end end;",
	"if #hs > 0 then " + vtCall + "('HSET', __ratelab_xc, unpack(hs)) end end;",
}, " ")

// edit replaces del bytes at pos of the body by text.
type edit struct {
	pos, del int
	text     string
}

// siteEdits are the edits of literal call site c (command not TIME, on
// one line) under key expiry; real is the real function's name. The sites
// and their edits are the same in both forms but one: with lean, a plain
// EXPIRE or PEXPIRE (lean.go) sets the safety TTL and notes the exact
// virtual deadline, where the full form sends the TTL shifted and reads
// the deadline back, as a body that reads TTLs needs.
func siteEdits(toks []luaToken, c callSite, real string, lean bool) []edit {
	wrapper := xCall
	if c.pcall {
		wrapper = xPcal
	}
	cmd := strings.ToUpper(c.cmd)
	open := c.argTok - 1
	if replyCommands[cmd] || open <= c.first+2 || !toks[open].is("(") {
		// the reply is translated too (or `redis.call'PING'`): through
		// the wrapper, whose errors report the first line (never in the
		// lean form)
		return []edit{{pos: c.start, del: c.end - c.start, text: wrapper}}
	}
	if lean && (cmd == "EXPIRE" || cmd == "PEXPIRE") {
		// (function(cmd, k, t, ...) ... end)('PEXPIRE', k, t): a function
		// made where the call runs, on the user's line (so are its
		// command's errors), which notes, sends S and takes the reply
		semi := ""
		if endsExpression(toks, c.first-1) {
			semi = ";" // else Lua reads "(" as the call of what precedes
		}
		return []edit{{pos: c.start, del: c.end - c.start, text: semi + "(function(cmd, k, t, ...) " + leanExpire(real) + " end)"}}
	}
	fn := xNote
	switch {
	case shiftCommands[cmd]:
		fn = xAbs
	case destCommands[cmd] || strings.HasSuffix(cmd, "STORE"):
		fn = xSet
	default:
		// the common case: only the first argument (the key) is noted, by
		// a one-argument function around it, the rest passed as written
		if first, last, ok := firstArg(toks, c); ok {
			k := xKey
			if ttlCommands[cmd] {
				k = xKeySet
			} else if e, ok := plainKey(toks[first : last+1]); ok && toks[first].line == toks[last].line {
				// (__ratelab_n[k] == 'n' and k or __ratelab_k(k)): a key
				// already noted 'n' needs nothing more, so the helper is
				// called only otherwise. Not clearing lk then is sound:
				// lk's key is noted with a deadline, so it is not k, and
				// this command (not DEL, UNLINK or GETDEL) removes or
				// makes no other key
				end := toks[last].pos + len(toks[last].val)
				return []edit{
					{pos: c.start, del: c.end - c.start, text: real},
					{pos: toks[first].pos, del: end - toks[first].pos, text: "(__ratelab_n[" + e + "] == 'n' and " + e + " or " + xKey + "(" + e + "))"},
				}
			}
			return []edit{
				{pos: c.start, del: c.end - c.start, text: real},
				{pos: toks[first].pos, text: k + "("},
				{pos: toks[last+1].pos, text: ")"},
			}
		}
		if ttlCommands[cmd] {
			fn = xSet
		}
	}
	return []edit{
		{pos: c.start, del: c.end - c.start, text: real},
		{pos: toks[open].pos + 1, text: fn + "("},
		{pos: toks[c.endTok].pos, text: ")"},
	}
}

// firstArg returns the token range [first, last] of the first argument
// after the command of literal call site c, when there is one that stays a
// single value inside a function call: followed by another argument, or
// the last one but not ending in a call or "..." (which may give several
// values). ok is false otherwise.
func firstArg(toks []luaToken, c callSite) (first, last int, ok bool) {
	first = c.argTok + 2
	if first >= c.endTok || !toks[c.argTok+1].is(",") {
		return 0, 0, false
	}
	depth := 0
	for j := first; j <= c.endTok; j++ {
		t := toks[j]
		switch {
		case t.is("(") || t.is("{") || t.is("["):
			depth++
		case (t.is(")") || t.is("}") || t.is("]")) && j < c.endTok:
			depth--
		case t.is(",") && depth == 0:
			return first, j - 1, j > first
		}
		if j == c.endTok {
			end := toks[j-1]
			if j == first || end.is(")") || end.is(".") {
				return 0, 0, false
			}
			return first, j - 1, true
		}
	}
	return 0, 0, false
}
