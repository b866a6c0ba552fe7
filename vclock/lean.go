package vclock

import (
	"strconv"
	"strings"
)

// The lean form of the expiry emulation (see the comment in expiry.go).
//
// Most limiters never look at a TTL: they read and write their keys and end
// with a plain PEXPIRE key ms. For a script whose every redis.call and
// redis.pcall is a literal call site of such a command (leanCommands, TIME,
// and EXPIRE or PEXPIRE with exactly a key and a time: no NX, XX, GT or LT),
// which uses redis only as redis.<name> (no alias of the table), nothing in
// the body can tell a key's real TTL (no TTL read, no KEEPTTL, no option
// that compares with the current TTL, no RENAME or COPY carrying one): only
// whether the key exists, which the emulation does not change. The lean
// prefix therefore does not read Redis's cached clock and does not give
// tracked keys their virtual remainder back; it reads the companion, removes
// the keys whose virtual deadline has passed (one UNLINK, one HDEL for all of
// them), and the body runs. A lean EXPIRE or PEXPIRE of a tracked key with a
// positive integer time t (at most 1e15) sends PEXPIRE key S instead (its
// real TTL becomes the safety TTL at once) and, when Redis answers 1, notes
// the exact virtual deadline vnow + t (ms); one of a key outside the tracked
// prefix sends PEXPIRE key t + S (not emulated, as in the full form). The
// suffix then records, for every
// tracked or touched key (every key a lean body writes is its command's
// first argument, so noted; keys of KEYS the body never touched are not
// looked at, unlike the full form):
//   - untouched by a command that may set or clear a TTL: its deadline as
//     before, its real TTL set again to S with PEXPIRE ... XX (a key with
//     no deadline: PEXPIRE S); a 0 (the key was gone at the start, or the body
//     made it again without a TTL) is resolved by PEXPIRETIME as below;
//   - else by PEXPIRETIME (skipped when no command after the key's lean
//     PEXPIRE can have changed its TTL: its TTL is then that one; the
//     commands that do not count are those, not DEL, UNLINK or GETDEL,
//     whose key is a name or KEYS[n] already noted as only touched: they
//     remove or make no other key): none when it has no TTL, no
//     longer tracked when gone, else the deadline its last lean (P)EXPIRE
//     noted, or the one it had before the body (nothing else in a lean body
//     sets a TTL), or, for a TTL the emulation did not set (an EXPIRE beyond
//     1e15 ms, a key of the prefix that had a real TTL of its own),
//     PEXPIRETIME - off - S with off read then (B as in the full form, read
//     after the body: such a deadline may be early by the time the body took);
//   - the cap and the companion's TTL as in the full form; a deadline is
//     written when its text differs from the one stored (both forms write
//     string.format('%d'), so when the number differs).
//
// Deadlines are those of the full form without its lag (the full form counts
// a TTL the body sets from the cached clock at that command, the lean one
// from vnow, exactly); a key missing at the start and made again without a
// TTL ends with none, as there. What differs: a companion is created only
// when it has something to hold (the full form makes one with an empty
// field to read the clock from), and a key without deadline that was made
// persistent behind ratelab's back stays tracked (the full form's PERSIST
// answered 0 and it was dropped), a key of KEYS the body did not touch
// and the companion does not track is left as it is, and a body that
// raises an error leaves every key as it was (the full form has made keys
// without deadline persistent by then). the expiry call's key and arguments are
// taken off KEYS and ARGV only when the body could see them: when it reads
// KEYS and ARGV otherwise than as KEYS[n] and ARGV[n], or past the call's
// own.

// leanCommands are the commands a lean body may send (besides TIME and
// plain EXPIRE and PEXPIRE): none reads, sets or carries a TTL, and none
// answers differently for a key with a TTL; they may remove a key (emptied
// or deleted) or make one without a TTL.
var leanCommands = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`GET MGET STRLEN GETRANGE SETRANGE APPEND INCR INCRBY INCRBYFLOAT DECR DECRBY SETNX
		GETBIT SETBIT BITCOUNT BITPOS EXISTS TYPE DEL UNLINK GETDEL
		HGET HMGET HGETALL HSET HMSET HSETNX HDEL HLEN HEXISTS HKEYS HVALS HINCRBY HINCRBYFLOAT HSTRLEN
		ZADD ZCARD ZCOUNT ZRANGE ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZLEXCOUNT
		ZREM ZREMRANGEBYSCORE ZREMRANGEBYRANK ZREMRANGEBYLEX ZSCORE ZMSCORE ZRANK ZREVRANK ZINCRBY ZPOPMIN ZPOPMAX
		LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LRANGE LLEN LTRIM LINDEX LSET LREM LINSERT LPOS
		SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SPOP SRANDMEMBER PFADD PFCOUNT`) {
		leanCommands[c] = true
	}
}

// leanExpiry reports whether the body of toks (call sites sites) can take
// the lean form: see the comment above.
func leanExpiry(body string, toks []luaToken, sites []callSite) bool {
	for _, c := range sites {
		open := c.argTok - 1
		if c.dynamic || strings.Contains(body[c.start:c.end], "\n") || open <= c.first+2 || !toks[open].is("(") {
			return false
		}
		cmd := strings.ToUpper(c.cmd)
		switch {
		case cmd == "TIME" || leanCommands[cmd]:
		case cmd == "EXPIRE" || cmd == "PEXPIRE":
			if !plainExpire(toks, c) {
				return false
			}
		default:
			return false
		}
	}
	// redis only as redis.<name>: an alias (local r = redis) would call
	// around the rewrite
	for i, t := range toks {
		if t.kind != tokName || t.val != "redis" || (i > 0 && (toks[i-1].is(".") || toks[i-1].is(":"))) {
			continue
		}
		if i+2 >= len(toks) || !toks[i+1].is(".") || toks[i+2].kind != tokName {
			return false
		}
	}
	return true
}

// argIndexes returns the highest indexes of KEYS and ARGV in toks when
// both are only ever read as KEYS[<integer>] and ARGV[<integer>] (0 when
// not read at all), else -1, -1.
func argIndexes(toks []luaToken) (maxKey, maxArg int) {
	for i, t := range toks {
		if t.kind != tokName || (t.val != "KEYS" && t.val != "ARGV") || (i > 0 && (toks[i-1].is(".") || toks[i-1].is(":"))) {
			continue
		}
		if i+3 >= len(toks) || !toks[i+1].is("[") || toks[i+2].kind != tokNumber || !toks[i+3].is("]") {
			return -1, -1
		}
		n, err := strconv.Atoi(toks[i+2].val)
		if err != nil || n < 1 {
			return -1, -1
		}
		if t.val == "KEYS" {
			maxKey = max(maxKey, n)
		} else {
			maxArg = max(maxArg, n)
		}
	}
	return maxKey, maxArg
}

// plainExpire reports whether literal call site c has exactly two
// arguments after its command, the last a single value (see singleValue).
func plainExpire(toks []luaToken, c callSite) bool {
	_, last, ok := firstArg(toks, c)
	if !ok || !toks[last+1].is(",") {
		return false
	}
	second, depth := last+2, 0
	for j := second; j < c.endTok; j++ {
		switch t := toks[j]; {
		case t.is("(") || t.is("{") || t.is("["):
			depth++
		case t.is(")") || t.is("}") || t.is("]"):
			depth--
		case t.is(",") && depth == 0:
			return false // a third argument
		}
	}
	return second < c.endTok && singleValue(toks[second:c.endTok])
}

// singleValue reports whether the expression toks, the last argument of a
// call, gives exactly one value: not "..." and not a call standing alone,
// unless the call is math.<name>(...), tonumber(...) or tostring(...).
func singleValue(toks []luaToken) bool {
	end := toks[len(toks)-1]
	switch {
	case end.is("."):
		return false // "..." gives any number
	case end.is("}") && !toks[0].is("{"), end.kind == tokString && len(toks) > 1:
		return false // maybe f{...} or f'...': a call
	case !end.is(")"):
		return true
	}
	depth := 0
	for i, t := range toks {
		switch {
		case t.is("(") || t.is("{") || t.is("["):
			depth++
		case t.is(")") || t.is("}") || t.is("]"):
			depth--
		case depth == 0 && i > 0 && t.kind == tokPunct && strings.Contains("+-*/%^<>=~", t.val):
			return true // a binary operator: one value
		case depth == 0 && t.kind == tokName && (t.val == "and" || t.val == "or" || t.val == "not"):
			return true
		}
	}
	// a call standing alone: one value for the functions known to give one
	n := len(toks)
	switch {
	case n >= 5 && toks[0].kind == tokName && toks[0].val == "math" && toks[1].is(".") && toks[2].kind == tokName && toks[3].is("("):
		return closing(toks, 3) == n-1
	case n >= 3 && toks[0].kind == tokName && (toks[0].val == "tonumber" || toks[0].val == "tostring") && toks[1].is("("):
		return closing(toks, 1) == n-1
	}
	return false
}

// leanExpire is the body of the function that replaces redis.call (real)
// at a lean EXPIRE or PEXPIRE site (see the comment at the top).
func leanExpire(real string) string {
	return strings.Join([]string{
		"__ratelab_lk = nil;",
		"if select('#', ...) > 0 then error('ratelab key expiry: a (P)EXPIRE with two arguments in the source got more') end;",
		// a key outside the tracked prefix: not emulated, its TTL shifted
		// by S (it never ends on the wall clock during the command)
		"if not " + tracked("k") + " then local x = tonumber(t); if x ~= nil and x % 1 == 0 and x > 0 and x <= 1e15 then",
		"if cmd ~= 'PEXPIRE' and string.upper(cmd) == 'EXPIRE' then x = x * 1000 end; local r = " + real + "('PEXPIRE', k, string.format('%d', x + __ratelab_xs)); return r end;",
		"local r = " + real + "(cmd, k, t); return r end;",
		"local s = __ratelab_n[k]; if s == nil then __ratelab_nn = __ratelab_nn + 1 end; if s == nil or s == 'n' then __ratelab_n[k] = 's' end;",
		// an integer in (0, 1e15]: x % 1 is NaN for an infinity
		"local x = tonumber(t); if x == nil or x % 1 ~= 0 or x > 1e15 or x <= 0 then local r = " + real + "(cmd, k, t); if r == 1 then __ratelab_n[k] = 'x' end; return r end;",
		"if cmd ~= 'PEXPIRE' and string.upper(cmd) == 'EXPIRE' then x = x * 1000 end;",
		"local r = " + real + "('PEXPIRE', k, __ratelab_xs); if r == 1 then __ratelab_n[k] = x + __ratelab_xv; __ratelab_lk = k end; return r",
	}, " ")
}

// endsExpression reports whether token i (none when i < 0) can end an
// expression: a name (not a keyword other than end, nil, true or false), a
// number, a string, ")", "]", "}" or "...".
func endsExpression(toks []luaToken, i int) bool {
	if i < 0 {
		return false
	}
	switch t := toks[i]; t.kind {
	case tokName:
		return !luaKeywords[t.val] || t.val == "end" || t.val == "nil" || t.val == "true" || t.val == "false"
	case tokString, tokNumber:
		return true
	default:
		if t.is(".") {
			// "..." (three dots in a row), not ".."
			return i >= 2 && toks[i-1].is(".") && toks[i-2].is(".") && toks[i-1].pos == t.pos-1 && toks[i-2].pos == t.pos-2
		}
		return t.is(")") || t.is("]") || t.is("}")
	}
}

// plainKey returns the text of toks when they are a local or global name
// (not nil, true or false) or KEYS[<integer>], expressions that may be
// evaluated twice.
func plainKey(toks []luaToken) (string, bool) {
	switch {
	case len(toks) == 1 && toks[0].kind == tokName && !luaKeywords[toks[0].val]:
		return toks[0].val, true
	case len(toks) == 4 && toks[0].kind == tokName && toks[0].val == "KEYS" && toks[1].is("[") && toks[2].kind == tokNumber && toks[3].is("]"):
		return "KEYS[" + toks[2].val + "]", true
	}
	return "", false
}

// luaKeywords are Lua 5.1's reserved words.
var luaKeywords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("and break do else elseif end false for function if in local nil not or repeat return then true until while") {
		luaKeywords[w] = true
	}
}

// leanPrefix is the one-line prefix of the lean form; uses reports the
// helper names the rewritten body calls (only those are defined). Lean on
// purpose, measured (BenchmarkExpiryRedisCPU): strings rather than numbers
// to redis.call (Redis formats a number with %.17g, slower than Lua's
// string.format('%d'), and slower still than a string at hand), few tables
// and closures.
//
// maxKey and maxArg are the highest KEYS and ARGV indexes the body reads
// when it reads them only as KEYS[<number>] and ARGV[<number>] (else -1):
// see expiryPop. vararg: see bodyFunction.
func leanPrefix(withTime bool, maxKey, maxArg int, vararg bool, uses func(name string) bool) string {
	return strings.Join(append(leanStatements(withTime, maxKey, maxArg, uses), bodyFunction(vararg)), " ")
}

// leanStatements are leanPrefix's statements but the body's function.
func leanStatements(withTime bool, maxKey, maxArg int, uses func(name string) bool) []string {
	c := vtCall
	l := expiryPop(maxKey, maxArg, withTime)
	l = append(l, noteHelpers(uses)...)
	l = append(l,
		// f: the companion's fields and deadlines (HGETALL); a deadline
		// passed is set to false there, its key removed
		"local __ratelab_f = "+c+"('HGETALL', __ratelab_xc);",
		"if #__ratelab_f > 0 then local gone; for i = 1, #__ratelab_f, 2 do local v = __ratelab_f[i + 1];",
		"if v ~= 'none' and __ratelab_f[i] ~= '' and __ratelab_xv > tonumber(v) then gone = gone or {}; gone[#gone + 1] = __ratelab_f[i]; __ratelab_f[i + 1] = false end end;",
		"if gone then for i = 1, #gone, 1000 do local j = math.min(#gone, i + 999); "+c+"('UNLINK', unpack(gone, i, j)); "+c+"('HDEL', __ratelab_xc, unpack(gone, i, j)) end end end;",
	)
	return l
}

// hasVararg reports whether toks hold "..." (three dots in a row).
func hasVararg(toks []luaToken) bool {
	for i := 2; i < len(toks); i++ {
		if toks[i].is(".") && toks[i-1].is(".") && toks[i-2].is(".") && toks[i-1].pos == toks[i].pos-1 && toks[i-2].pos == toks[i].pos-2 {
			return true
		}
	}
	return false
}

// leanSuffix ends the body's function on a new line, runs it and records
// the deadlines (see the comment above): first of the keys the companion
// tracks (read off the HGETALL reply: d their deadline, s what the body did
// to them, marked false in __ratelab_n once done), then of the other keys
// the body touched (d nil).
var leanSuffix = "\nend; local __ratelab_r = " + xBody + "(); " + leanRecord + " return __ratelab_r"

// leanRecord is the part of leanSuffix that records the deadlines after
// the body ran.
var leanRecord = strings.Join([]string{
	"do local h1, h2, hs, hdel, off;",
	"for i = 1, #__ratelab_f, 2 do local k, d = __ratelab_f[i], __ratelab_f[i + 1]; if d and k ~= '' then",
	"local s = __ratelab_n[k]; if s then __ratelab_n[k] = false; __ratelab_nn = __ratelab_nn - 1 else s = 'n' end;", leanKey, "end end;",
	"if __ratelab_nn > 0 then for k, s in pairs(__ratelab_n) do if s then local d = nil;", leanKey, "end end end;",
	"if hdel then for i = 1, #hdel, 1000 do " + vtCall + "('HDEL', __ratelab_xc, unpack(hdel, i, math.min(#hdel, i + 999))) end end;",
	"if hs then hs[#hs + 1] = h1; hs[#hs + 1] = h2; for i = 1, #hs, 1000 do " + vtCall + "('HSET', __ratelab_xc, unpack(hs, i, math.min(#hs, i + 999))) end",
	"elseif h1 then " + vtCall + "('HSET', __ratelab_xc, h1, h2) end;",
	"if #__ratelab_f > 0 or h1 then " + vtCall + "('PEXPIRE', __ratelab_xc, __ratelab_xs) end end;",
}, " ")

// leanKey records the deadline of key k (d its deadline before the body or
// nil, s what the body did to it: see noteHelpers) in hs or hdel and sets
// its safety TTL; off is read once, when first needed.
var leanKey = strings.Join([]string{
	"local v, capped = nil, false;",
	"if s == 'n' and d == 'none' then if " + vtCall + "('PEXPIRE', k, __ratelab_xs) == 1 then v = d end",
	"else if s == 'n' and d then if " + vtCall + "('PEXPIRE', k, __ratelab_xs, 'XX') == 1 then v, capped = d, true end end;",
	"if v == nil then local px = 0; if __ratelab_lk ~= k then px = " + vtCall + "('PEXPIRETIME', k) end;",
	"if px == -1 then v = 'none'; " + vtCall + "('PEXPIRE', k, __ratelab_xs)",
	"elseif px >= 0 then if s ~= 'n' and s ~= 's' and s ~= 'x' then v, capped = string.format('%d', s), true",
	"elseif s ~= 'x' and d then v = d; if d == 'none' then " + vtCall + "('PEXPIRE', k, __ratelab_xs) end",
	// a TTL the emulation did not set: off as the full form reads it
	"else if off == nil then if " + vtCall + "('PEXPIRE', __ratelab_xc, __ratelab_xs) == 0 then " + vtCall + "('HSET', __ratelab_xc, '', ''); " + vtCall + "('PEXPIRE', __ratelab_xc, __ratelab_xs) end;",
	"off = " + vtCall + "('PEXPIRETIME', __ratelab_xc) - tonumber(__ratelab_xs) - __ratelab_xv end; v = string.format('%d', px - off - tonumber(__ratelab_xs)) end end end end;",
	"if v == nil then if d then hdel = hdel or {}; hdel[#hdel + 1] = k end",
	"elseif v ~= d then if h1 == nil then h1, h2 = k, v else hs = hs or {}; hs[#hs + 1] = k; hs[#hs + 1] = v end end;",
	"if v and v ~= 'none' and not capped and tonumber(v) >= __ratelab_xv then " + vtCall + "('PEXPIRE', k, __ratelab_xs) end;",
}, " ")
