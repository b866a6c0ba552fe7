package vclock

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Key expiry on the virtual clock in a deadline table (ExpiryTable).
//
// The full and lean forms (expiry.go, lean.go) keep each key's virtual
// deadline beside a real TTL shifted past it, re-set on every call; the
// table form keeps no real TTL at all. Every key's virtual deadline (ms
// since the Unix epoch, as Redis keeps a key's expire) lives in one hash,
// the deadline table, passed as the call's next-to-last key; the keys
// themselves stay persistent in Redis. Every redis.call and redis.pcall of
// the script goes through one translation, the same for a script and for a
// single command run through one (Table's plain-command runner is such a
// script), so a SETEX sent plain and a PTTL read in a script agree:
//
//   - The command's keys and their flags come from COMMAND GETKEYSANDFLAGS
//     (Redis's own key specs; the flags reach Lua as status replies). Every key whose deadline lies before the
//     call's virtual ms (now > deadline, as Redis: a key set with EX 60 at
//     t is there at t+60 s and gone 1 ms later) is deleted (DEL) and its
//     deadline forgotten, before the command runs: Redis's lazy expiry.
//   - EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX, XX, GT, LT), SETEX, PSETEX,
//     SET ... EX|PX|EXAT|PXAT|KEEPTTL, GETEX ... EX|PX|EXAT|PXAT|PERSIST
//     and PERSIST set or clear the table's entry (an expiry at or before
//     now deletes the key, as Redis does); SET, SETEX, PSETEX and GETEX
//     reach Redis without their expiry options. TTL, PTTL, EXPIRETIME and
//     PEXPIRETIME answer from the table, rounded as Redis rounds. A command
//     that Redis would refuse (a bad number, an unknown option) is sent as
//     it is, for Redis to answer the error.
//   - After the command: a key it overwrote (an OW key: the destination of
//     a ...STORE, GETSET) loses its deadline, as Redis clears the TTL; a
//     written key that is gone (DEL, UNLINK, the last element popped)
//     loses it; RENAME, RENAMENX and COPY carry the source's deadline to
//     the destination. Every key written (an RW, OW or RM key, or one given
//     a deadline) is added to the written-keys set, the call's last key, so
//     the caller can delete all of them at the end.
//   - TIME answers the virtual time, as with the TIME rewrite.
//
// The caller appends the two keys (the deadline table, then the
// written-keys set) and the virtual time (TimeArg, integer µs) as the last
// ARGV; the prefix pops them. Every call site but a literal TIME goes
// through the translation function, declared on the first code line: a
// command error raised there reports that line ("on @user_script:1.")
// rather than the call's. Work per call: one COMMAND GETKEYSANDFLAGS and
// one HMGET of the command's keys, plus writes only when a deadline is
// due, set or moved, or a key is written: no scan of other keys, and no
// real TTL re-set, so a WATCHed key changes only when a command changes it
// (or it expires on the virtual clock, as on a real server).

// Names the table form declares, besides those of the TIME rewrite.
const (
	tCall  = "__ratelab_tcall"
	tPcall = "__ratelab_tpcall"
)

// tableArgsError is the error reply of a call without the table form's two
// keys.
const tableArgsError = "ERR ratelab deadline table: the last two keys must be the deadline table and the written-keys set, and the last ARGV the virtual time"

// tablePrefix is the one-line prefix of the table form (vararg: the body
// uses "...", which the prefix leaves alone: the body is not wrapped).
func tablePrefix(uses func(name string) bool) string {
	l := []string{
		"local __ratelab_tn = #KEYS; if __ratelab_tn < 2 then return redis.error_reply('" + tableArgsError + "') end;",
		"local __ratelab_td, __ratelab_tw = KEYS[__ratelab_tn - 1], KEYS[__ratelab_tn]; KEYS[__ratelab_tn] = nil; KEYS[__ratelab_tn - 1] = nil;",
	}
	l = append(l, vtPop...)
	l = append(l,
		"local "+vtCall+", "+vtPcall+" = redis.call, redis.pcall;",
		"local __ratelab_now = tonumber("+vtSec+") * 1000 + math.floor(tonumber("+vtUsec+") / 1000);",
	)
	if uses(xVTime) {
		l = append(l, "local function "+xVTime+"() return {"+vtSec+", "+vtUsec+"} end;")
	}
	l = append(l, tableLib...)
	l = append(l,
		"local function "+tCall+"(cmd, ...) return __ratelab_tx("+vtCall+", cmd, ...) end;",
		"local function "+tPcall+"(cmd, ...) return __ratelab_tx("+vtPcall+", cmd, ...) end;",
		"local redis = setmetatable({call = "+tCall+", pcall = "+tPcall+"}, {__index = redis}); ",
	)
	return strings.Join(l, " ")
}

// tableLib declares __ratelab_tx(f, cmd, ...): the translation of one call,
// f the real redis.call or redis.pcall. Lines are joined with spaces: no
// Lua comments here.
var tableLib = strings.Split(strings.TrimSpace(`

local function __ratelab_int(v)
 if type(v) == 'number' then if v == math.floor(v) and math.abs(v) < 1e15 then return v end return nil end
 if type(v) ~= 'string' or #v > 15 or not string.match(v, '^%-?%d+$') then return nil end
 return tonumber(v)
end
local function __ratelab_gone(k) __ratelab_call('DEL', k); __ratelab_call('HDEL', __ratelab_td, k) end
local function __ratelab_due(k, when) if when <= __ratelab_now then __ratelab_gone(k) else __ratelab_call('HSET', __ratelab_td, k, string.format('%d', when)) end; __ratelab_call('SADD', __ratelab_tw, k) end
local function __ratelab_err(r) return type(r) == 'table' and r.err ~= nil end
local function __ratelab_when(o, t)
 if t == nil or t <= 0 then return nil end
 local w = t * ((o == 'EX' or o == 'EXAT' or o == 'EXPIRE' or o == 'EXPIREAT' or o == 'SETEX') and 1000 or 1)
 if o == 'EX' or o == 'PX' or o == 'SETEX' or o == 'PSETEX' then w = w + __ratelab_now end
 return w
end
local function __ratelab_ttl(f, u, n, a, k, dl)
 if (u == 'EXPIRE' or u == 'PEXPIRE' or u == 'EXPIREAT' or u == 'PEXPIREAT') and n >= 2 then
  local t, c, bad = __ratelab_int(a[2]), {}, false
  for i = 3, n do local o = string.upper(tostring(a[i])); if o == 'NX' or o == 'XX' or o == 'GT' or o == 'LT' then c[o] = true else bad = true end end
  if t == nil or bad or (c.NX and (c.XX or c.GT or c.LT)) or (c.GT and c.LT) then return false end
  local when = t * ((u == 'EXPIRE' or u == 'EXPIREAT') and 1000 or 1)
  if u == 'EXPIRE' or u == 'PEXPIRE' then when = when + __ratelab_now end
  if __ratelab_call('EXISTS', k) == 0 then return true, 0 end
  local cur = dl[k]
  if (c.NX and cur) or (c.XX and not cur) or (c.GT and (not cur or when <= cur)) or (c.LT and cur and when >= cur) then return true, 0 end
  __ratelab_due(k, when); return true, 1
 elseif (u == 'TTL' or u == 'PTTL' or u == 'EXPIRETIME' or u == 'PEXPIRETIME') and n == 1 then
  if __ratelab_call('EXISTS', k) == 0 then return true, -2 end
  local x = dl[k]; if not x then return true, -1 end
  if u == 'TTL' or u == 'PTTL' then x = x - __ratelab_now end
  if x < 0 then x = 0 end
  if u == 'PTTL' or u == 'PEXPIRETIME' then return true, x end
  return true, math.floor((x + 500) / 1000)
 elseif u == 'PERSIST' and n == 1 then
  if not dl[k] or __ratelab_call('EXISTS', k) == 0 then return true, 0 end
  __ratelab_call('HDEL', __ratelab_td, k); return true, 1
 elseif (u == 'SETEX' or u == 'PSETEX') and n == 3 then
  local when = __ratelab_when(u, __ratelab_int(a[2])); if not when then return false end
  local r = f('SET', k, a[3]); if __ratelab_err(r) then return true, r end
  __ratelab_due(k, when); return true, r
 elseif u == 'SET' and n >= 2 then
  local w, when, keep, get, nx, xx, i = {k, a[2]}, nil, false, false, false, false, 3
  while i <= n do
   local o = string.upper(tostring(a[i]))
   if (o == 'EX' or o == 'PX' or o == 'EXAT' or o == 'PXAT') and not when and not keep then when = __ratelab_when(o, __ratelab_int(a[i + 1])); if not when then return false end; i = i + 2
   elseif o == 'KEEPTTL' and not when and not keep then keep = true; i = i + 1
   elseif (o == 'NX' and not xx) or (o == 'XX' and not nx) or (o == 'GET' and not get) then nx, xx, get = nx or o == 'NX', xx or o == 'XX', get or o == 'GET'; w[#w + 1] = a[i]; i = i + 1
   else return false end
  end
  local r = f('SET', unpack(w)); if __ratelab_err(r) then return true, r end
  local done = r
  if get then done = (nx and not r) or (xx and r) or (not nx and not xx) end
  if done then
   if when then __ratelab_due(k, when) else if not keep then __ratelab_call('HDEL', __ratelab_td, k) end; __ratelab_call('SADD', __ratelab_tw, k) end
  end
  return true, r
 elseif u == 'GETEX' and n >= 1 and n <= 3 then
  local when, persist = nil, false
  if n >= 2 then
   local o = string.upper(tostring(a[2]))
   if n == 3 and (o == 'EX' or o == 'PX' or o == 'EXAT' or o == 'PXAT') then when = __ratelab_when(o, __ratelab_int(a[3])); if not when then return false end
   elseif n == 2 and o == 'PERSIST' then persist = true else return false end
  end
  local r = f('GET', k); if __ratelab_err(r) then return true, r end
  if r and when then __ratelab_due(k, when) elseif r and persist then __ratelab_call('HDEL', __ratelab_td, k) end
  return true, r
 end
 return false
end
local function __ratelab_tx(f, cmd, ...)
 if type(cmd) ~= 'string' then return f(cmd, ...) end
 local u = string.upper(cmd)
 if u == 'TIME' then return {`+vtSec+`, `+vtUsec+`} end
 local n, a, keys, wr, dl = select('#', ...), {...}, {}, {}, {}
 local kf = `+vtPcall+`('COMMAND', 'GETKEYSANDFLAGS', cmd, ...)
 if type(kf) == 'table' and kf.err == nil then
  for i = 1, #kf do local k = kf[i][1]; keys[#keys + 1] = k; for _, fl in ipairs(kf[i][2]) do fl = type(fl) == 'table' and fl.ok or fl; if fl == 'RW' or fl == 'OW' or fl == 'RM' then wr[k] = wr[k] == 'OW' and 'OW' or fl end end end
 end
 if #keys > 0 then
  local v = __ratelab_call('HMGET', __ratelab_td, unpack(keys))
  for i = 1, #keys do if v[i] then local d = tonumber(v[i]); if __ratelab_now > d then __ratelab_gone(keys[i]) else dl[keys[i]] = d end end end
 end
 local k = a[1]; if k ~= nil then k = tostring(k) end
 local h, hr = __ratelab_ttl(f, u, n, a, k, dl)
 if h then return hr end
 local r = f(cmd, ...)
 if __ratelab_err(r) then return r end
 local moved = false
 if (u == 'RENAME' or u == 'RENAMENX' or u == 'COPY') and n >= 2 and (r == 1 or (type(r) == 'table' and r.ok)) then
  local src, dst = k, tostring(a[2]); local d = dl[src]; moved = dst
  if u ~= 'COPY' then __ratelab_call('HDEL', __ratelab_td, src) end
  if d then __ratelab_call('HSET', __ratelab_td, dst, string.format('%d', d)) else __ratelab_call('HDEL', __ratelab_td, dst) end
 end
 local ws = {}
 for key, fl in pairs(wr) do
  if key ~= moved then
   if fl == 'OW' or (u == 'GETSET' and key == k) then if dl[key] then __ratelab_call('HDEL', __ratelab_td, key) end
   elseif dl[key] and __ratelab_call('EXISTS', key) == 0 then __ratelab_call('HDEL', __ratelab_td, key) end
  end
  ws[#ws + 1] = key
 end
 if #ws > 0 then __ratelab_call('SADD', __ratelab_tw, unpack(ws)) end
 return r
end
`), "\n")

// tableRunner runs one plain command on the table form: its dynamic call
// goes through the translation; redis.pcall gives the command's own error
// reply back as it is.
const tableRunner = "return redis.pcall(unpack(ARGV))"

// Table is the Go side of the deadline table for a client that sends its
// commands one by one (a client-side script): Wire turns each command
// into the call of the table form that runs it, so plain commands and the
// scripts it EVALs share one clock and one table. The zero Table is not
// ready: use NewTable. Safe for concurrent use.
type Table struct {
	mu      sync.Mutex
	runner  tableScript
	scripts map[string]tableScript // SHA1 of a script as sent -> rewritten
	loaded  map[string]bool        // rewritten SHA1s handed out to load
}

type tableScript struct{ sha, src string }

// NewTable returns a Table with no script known but its plain-command
// runner.
func NewTable() *Table {
	rw, err := Rewrite(tableRunner, Options{Expiry: ExpiryTable})
	if err != nil {
		panic("vclock: the table runner does not rewrite: " + err.Error())
	}
	return &Table{runner: newTableScript(rw.Source), scripts: map[string]tableScript{}, loaded: map[string]bool{}}
}

func newTableScript(src string) tableScript {
	h := sha1.Sum([]byte(src))
	return tableScript{sha: hex.EncodeToString(h[:]), src: src}
}

// Wire returns the command to send in place of cmd (name first) at
// virtual time now, on the deadline table named table and the
// written-keys set named written, and the rewritten sources the server
// must have before it (SCRIPT LOAD them first, then tell Loaded). A plain command becomes the EVALSHA of the runner; EVAL and
// EVALSHA of a script the Table has seen (by EVAL or SCRIPT LOAD) the
// EVALSHA of its rewrite; MULTI, EXEC, DISCARD, WATCH, UNWATCH, SCRIPT and
// a script that cannot be rewritten or that the Table never saw go as they
// are (on Redis's clock, or answered NOSCRIPT).
func (t *Table) Wire(now time.Time, table, written string, cmd []string) (wire, load []string) {
	name := strings.ToUpper(cmd[0])
	switch name {
	case "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH":
		return cmd, nil
	case "SCRIPT":
		if len(cmd) == 3 && strings.EqualFold(cmd[1], "LOAD") {
			t.register(cmd[2])
		}
		return cmd, nil
	case "EVAL", "EVAL_RO", "EVALSHA", "EVALSHA_RO":
		if len(cmd) < 3 {
			return cmd, nil
		}
		nk, err := strconv.Atoi(cmd[2])
		if err != nil || nk < 0 || nk > len(cmd)-3 {
			return cmd, nil // Redis answers the error
		}
		var sc tableScript
		var ok bool
		if strings.HasPrefix(name, "EVALSHA") {
			t.mu.Lock()
			sc, ok = t.scripts[strings.ToLower(cmd[1])]
			t.mu.Unlock()
		} else {
			sc, ok = t.register(cmd[1])
		}
		if !ok {
			return cmd, nil
		}
		wire = append([]string{"EVALSHA", sc.sha, strconv.Itoa(nk + 2)}, cmd[3:3+nk]...)
		wire = append(append(wire, table, written), cmd[3+nk:]...)
		return append(wire, TimeArg(now)), t.load(sc)
	}
	wire = append([]string{"EVALSHA", t.runner.sha, "2", table, written}, cmd...)
	return append(wire, TimeArg(now)), t.load(t.runner)
}

// Register makes src (a script for EVAL) known to the Table by its SHA1,
// which it returns, and returns its rewrite for the table form: the
// source to load in Redis before Wire's EVALSHA of it. An error is
// Rewrite's (a function library, a script that does not lex).
func (t *Table) Register(src string) (sha, rewritten string, err error) {
	h := sha1.Sum([]byte(src))
	sha = hex.EncodeToString(h[:])
	sc, ok := t.register(src)
	if !ok {
		_, err = Rewrite(src, Options{Expiry: ExpiryTable})
		return "", "", err
	}
	return sha, sc.src, nil
}

// Known reports whether the Table knows a script by sha, the SHA1 of the
// script as sent (any case).
func (t *Table) Known(sha string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.scripts[strings.ToLower(sha)]
	return ok
}

// register rewrites src unless known; ok is false when it cannot be.
func (t *Table) register(src string) (tableScript, bool) {
	h := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(h[:])
	t.mu.Lock()
	sc, ok := t.scripts[sha]
	t.mu.Unlock()
	if ok {
		return sc, true
	}
	rw, err := Rewrite(src, Options{Expiry: ExpiryTable})
	if err != nil {
		return tableScript{}, false
	}
	sc = newTableScript(rw.Source)
	t.mu.Lock()
	t.scripts[sha] = sc
	t.mu.Unlock()
	return sc, true
}

// load returns sc's source until Loaded is told it is loaded.
func (t *Table) load(sc tableScript) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loaded[sc.sha] {
		return nil
	}
	return []string{sc.src}
}

// Loaded records that src, a source Wire returned to load, is loaded in
// the server: Wire stops returning it.
func (t *Table) Loaded(src string) {
	sc := newTableScript(src)
	t.mu.Lock()
	t.loaded[sc.sha] = true
	t.mu.Unlock()
}
