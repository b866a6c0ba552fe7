package vclock

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Virtual time for scripts that read Redis TIME.
//
// Rewrite (Options.Time) rewrites a script so that redis.call('TIME') and
// redis.pcall('TIME') answer a time the caller passes as an extra, trailing
// ARGV, and every other command still runs on the real server. The rewrite
// is one line of Lua put in front of the script's first code line (after a
// "#!lua" shebang, which stays line 1), so the script keeps its line numbers:
//
//	local <vt> = ARGV[#ARGV]; ARGV[#ARGV] = nil; ...
//	local redis = setmetatable({call = <wrapper>, pcall = <wrapper>}, {__index = redis}); <user's line>
//
// Measured on Redis 7.0.15 (tests in time_test.go):
//   - TIME inside a script answers a Lua table of two strings, {"1795424251",
//     "312450"} (seconds, microseconds, no leading zeros); the rewrite answers
//     the same shape, a fresh table per call.
//   - ARGV is an ordinary mutable table: after ARGV[#ARGV] = nil the script
//     sees #ARGV and ARGV[#ARGV] exactly as without the appended time.
//   - Errors keep the user's line numbers: a Lua error and a command error
//     ("user_script:3: ...", "on @user_script:3.") read the same before and
//     after the rewrite. Redis takes the line of a command error from the Lua
//     function that called redis.call, so a wrapper function would move every
//     command error to the prefix's line; the rewrite therefore also replaces
//     `redis.call` / `redis.pcall` at call sites whose command is a string
//     literal other than TIME by the real functions (same line, no newline).
//     Only calls whose command is not a literal (a variable, an alias of
//     redis.call) go through the wrapper and report the first code line.
//   - A script with the shebang keeps its flags (a write under
//     flags=no-writes is still refused).
//
// Function libraries ("#!lua name=...", FUNCTION LOAD) are not rewritten:
// their functions take arguments per FCALL, not from a chunk-level ARGV.

// Script is a script rewritten by Rewrite, with what a
// static scan of the original found about its clock.
type Script struct {
	// Source is the rewritten script: EVAL it, or SCRIPT LOAD it and EVALSHA
	// its own SHA1 (it is a different script from the original), with
	// TimeArg appended as the last ARGV (see Args).
	Source string
	// TimeCalls counts call sites redis.call/redis.pcall whose command is
	// the string literal TIME (any case). Zero with DynamicCalls zero means
	// the script never reads the clock.
	TimeCalls int
	// DynamicCalls counts uses of redis.call/redis.pcall whose command is not
	// a string literal (or that take the function as a value): these may
	// read TIME too, and they still answer virtual time, but Resolution
	// cannot see what they read.
	DynamicCalls int
	// Resolution is the finest clock step the script reads: time.Second when
	// every TIME reply is only ever indexed [1] (whole seconds);
	// time.Microsecond when the reply's [2] is read, or when its use cannot
	// be followed (passed to a function, dynamic calls): finer is the safe
	// guess. Zero when the script has no TIME call at all. A heuristic over
	// the source, not an execution.
	Resolution time.Duration
	// AbsoluteExpiries are the absolute-expiry commands and options found
	// (see FindAbsoluteExpiries). Under the TIME rewrite alone each of them
	// compares the virtual clock with Redis's real one (keys vanish early or
	// late); Options.Expiry maps them between the clocks.
	AbsoluteExpiries []AbsoluteExpiry
}

// ErrFunctionLibrary is returned by Rewrite for a FUNCTION LOAD
// library ("#!lua name=..."), which it cannot rewrite.
var ErrFunctionLibrary = errors.New("virtual time: function libraries (#!lua name=...) are not supported, only EVAL scripts")

// Names the prefix declares; nothing in a user's script should use them.
const (
	vtNow   = "__ratelab_vt"
	vtSec   = "__ratelab_vt_s"
	vtUsec  = "__ratelab_vt_u"
	vtCall  = "__ratelab_call"
	vtPcall = "__ratelab_pcall"
	vtTime  = "__ratelab_time"
	// xVTime replaces redis.call and redis.pcall at a literal TIME site:
	// the site answers the virtual time itself
	xVTime = "__ratelab_vtime"
)

// timePrefix is the Lua put in front of the script's first code line by
// the TIME rewrite alone. It has no newline. It pops the virtual time
// (integer µs, at least 7 digits: TimeArg) off ARGV, splits it into the
// strings TIME answers, defines xVTime when uses reports it (the literal
// TIME sites call it), and shadows the global redis with a table whose
// call and pcall answer TIME and pass everything else to the real
// functions, for the calls whose command is not a literal. Inside the
// wrapper functions `redis` is still the global: the local is in scope
// only after its own statement.
func timePrefix(uses func(name string) bool) string {
	l := append([]string{}, vtPop...)
	l = append(l, "local "+vtCall+", "+vtPcall+" = redis.call, redis.pcall;")
	if uses(xVTime) {
		l = append(l, "local function "+xVTime+"() return {"+vtSec+", "+vtUsec+"} end;")
	}
	l = append(l,
		"local function "+vtTime+"(cmd) return type(cmd) == 'string' and string.upper(cmd) == 'TIME' end;",
		"local redis = setmetatable({",
		"call = function(cmd, ...) if "+vtTime+"(cmd) then return {"+vtSec+", "+vtUsec+"} end return "+vtCall+"(cmd, ...) end,",
		"pcall = function(cmd, ...) if "+vtTime+"(cmd) then return {"+vtSec+", "+vtUsec+"} end return "+vtPcall+"(cmd, ...) end",
		"}, {__index = redis}); ",
	)
	return strings.Join(l, " ")
}

// vtPop pops the virtual time off ARGV into the two strings TIME answers.
var vtPop = []string{
	"local " + vtNow + " = ARGV[#ARGV]; ARGV[#ARGV] = nil;",
	"local " + vtSec + ", " + vtUsec + " = string.match(tostring(" + vtNow + "), '^(%d+)(%d%d%d%d%d%d)$');",
	"if not " + vtSec + " then return redis.error_reply('ERR ratelab virtual time: the last ARGV must be the time in integer microseconds (7 digits or more), got ' .. tostring(" + vtNow + ")) end;",
	vtSec + " = (string.gsub(" + vtSec + ", '^0+(%d)', '%1')); " + vtUsec + " = (string.gsub(" + vtUsec + ", '^0+(%d)', '%1'));",
}

// TimeArg formats t as the trailing ARGV of a rewritten script:
// integer microseconds since the Unix epoch (t truncated to the µs),
// zero-padded to at least 7 digits so that the seconds part is never empty
// ("0000001" is 1 µs after the epoch). A time before the epoch gives a
// negative number, which the script rejects with an error reply.
func TimeArg(t time.Time) string {
	us := t.UnixMicro()
	if us < 0 {
		return strconv.FormatInt(us, 10)
	}
	return fmt.Sprintf("%07d", us)
}

// Args returns a new slice: args followed by TimeArg(now), the ARGV
// of one call of s.Source at virtual time now.
func (s Script) Args(now time.Time, args ...any) []any {
	out := make([]any, 0, len(args)+1)
	return append(append(out, args...), TimeArg(now))
}

// Expiry selects Rewrite's emulation of key expiry on the virtual clock.
// The zero value is NoExpiry.
type Expiry int

const (
	// NoExpiry: keys expire on Redis's own clock.
	NoExpiry Expiry = iota
	// ExpiryLean: the lean form when every call site of the body allows
	// it (see lean.go), else the full one. What ratelab sends.
	ExpiryLean
	// ExpiryFull: the full form (see expiry.go) for every script.
	ExpiryFull
	// ExpiryTable: the deadline table (see table.go): keys keep no real
	// TTL, their virtual deadlines live in a hash; the call takes that
	// hash and the written-keys set as its last two keys, and the time
	// (Time is implied).
	ExpiryTable
)

// Options says what Rewrite emits. Without Expiry, Time is implied: the
// zero Options is the TIME rewrite alone.
type Options struct {
	// Time: TIME answers the virtual time passed as the last ARGV
	// (Script.Args).
	Time bool
	// Expiry: keys of the tracked prefix expire on the virtual clock; the
	// call takes the companion key and three more ARGV (after the time
	// when Time is set).
	Expiry Expiry
}

// Rewrite rewrites src, the source of a Lua script for EVAL, as o asks:
// with o.Time its TIME calls answer virtual time (see the comment above
// Script for the technique and what was measured), with o.Expiry its keys
// expire on the virtual clock (see expiry.go). The rewritten script must be
// called with the extra ARGV (and key) o asks for, last; the script removes
// them before the user's code runs, so #KEYS, #ARGV and ARGV[#ARGV] mean
// what they meant.
//
// It fails on a function library shebang (ErrFunctionLibrary) and on an
// unterminated string or long comment (the script would not compile).
// Safe for concurrent use.
//
// The emitter is one for every option: the same call sites get the same
// edits in place (a literal TIME site answers itself; with expiry, a
// literal command notes its keys through siteEdits, whose one lean-only
// edit is the plain EXPIRE and PEXPIRE), one prefix goes on the body's
// first line (the TIME rewrite's, or the full or the shorter lean expiry
// form's: the same pop and key notes, see expiryPop and noteHelpers), and
// with expiry the body runs in a function whose end and the form's suffix
// go on a new last line.
func Rewrite(src string, o Options) (Script, error) {
	table := o.Expiry == ExpiryTable
	withTime := o.Time || o.Expiry == NoExpiry || table
	expiry := o.Expiry != NoExpiry && !table
	leanOK := o.Expiry == ExpiryLean
	if isFunctionLibrary(src) {
		return Script{}, ErrFunctionLibrary
	}
	bodyAt := shebangEnd(src)
	body := src[bodyAt:]
	toks, err := luaLex(body, 1+strings.Count(src[:bodyAt], "\n"))
	if err != nil {
		return Script{}, err
	}
	sites := callSites(toks)
	out := Script{AbsoluteExpiries: absoluteExpiries(toks, sites)}

	lean := expiry && leanOK && leanExpiry(body, toks, sites)
	var edits []edit
	for _, c := range sites {
		oneLine := !strings.Contains(body[c.start:c.end], "\n")
		switch {
		case c.dynamic:
			out.DynamicCalls++
		case strings.EqualFold(c.cmd, "TIME"):
			out.TimeCalls++
			if withTime && oneLine {
				edits = append(edits, edit{pos: c.start, del: c.end - c.start, text: xVTime})
			}
		case oneLine:
			// a literal command other than TIME: call the real function
			// from the user's line, so its errors keep that line
			real := vtCall
			if c.pcall {
				real = vtPcall
			}
			switch {
			case table:
				// through the translation, whose errors report the
				// first code line
				wrapper := tCall
				if c.pcall {
					wrapper = tPcall
				}
				edits = append(edits, edit{pos: c.start, del: c.end - c.start, text: wrapper})
			case expiry:
				edits = append(edits, siteEdits(toks, c, real, lean)...)
			default:
				edits = append(edits, edit{pos: c.start, del: c.end - c.start, text: real})
			}
		}
	}
	uses := func(name string) bool {
		return slices.ContainsFunc(edits, func(e edit) bool { return e.text == name || strings.Contains(e.text, name+"(") })
	}
	var b strings.Builder
	b.WriteString(src[:bodyAt])
	if bodyAt == len(src) && bodyAt > 0 && !strings.HasSuffix(src, "\n") {
		b.WriteString("\n") // a shebang and nothing else
	}
	switch {
	case table:
		b.WriteString(tablePrefix(uses))
	case lean:
		maxKey, maxArg := argIndexes(toks)
		b.WriteString(leanPrefix(withTime, maxKey, maxArg, hasVararg(toks), uses))
	case expiry:
		b.WriteString(expiryPrefix(withTime, hasVararg(toks)))
	default:
		b.WriteString(timePrefix(uses))
	}
	// in source order (a site's closing edit comes after its nested sites'
	// edits; where two sites' edits share a position, they insert the same
	// text, or the outer site inserts before the inner one's replacement)
	slices.SortStableFunc(edits, func(x, y edit) int { return x.pos - y.pos })
	last := 0
	for _, e := range edits {
		b.WriteString(body[last:e.pos])
		b.WriteString(e.text)
		last = e.pos + e.del
	}
	b.WriteString(body[last:])
	switch {
	case lean:
		b.WriteString(leanSuffix)
	case expiry:
		b.WriteString(expirySuffix)
	}
	out.Source = b.String()
	out.Resolution = timeResolution(toks, sites, out.DynamicCalls)
	return out, nil
}

// shebangEnd returns the offset just past a "#!..." first line and its
// newline; 0 without a shebang.
func shebangEnd(src string) int {
	if !strings.HasPrefix(src, "#!") {
		return 0
	}
	if i := strings.IndexByte(src, '\n'); i >= 0 {
		return i + 1
	}
	return len(src)
}

// isFunctionLibrary reports a "#!lua name=..." shebang (FUNCTION LOAD).
func isFunctionLibrary(src string) bool {
	line := src[:shebangEnd(src)]
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, "name=") {
			return true
		}
	}
	return false
}

// AbsoluteExpiry is one absolute-expiry command or option in a script.
type AbsoluteExpiry struct {
	// Line is the 1-based line of the script (a shebang is line 1).
	Line int
	// Command is the Redis command in upper case ("EXPIREAT", "SET"), or ""
	// when the keyword is a string literal outside a redis.call whose
	// command is a literal (e.g. `local opt = 'PXAT'`).
	Command string
	// Option is the absolute option of Command ("EXAT", "PXAT", "ABSTTL"),
	// or "" for the commands EXPIREAT and PEXPIREAT themselves.
	Option string
}

// String renders the finding, e.g. "line 7: SET ... PXAT".
func (a AbsoluteExpiry) String() string {
	switch {
	case a.Option == "":
		return fmt.Sprintf("line %d: %s", a.Line, a.Command)
	case a.Command == "":
		return fmt.Sprintf("line %d: %s (string literal)", a.Line, a.Option)
	}
	return fmt.Sprintf("line %d: %s ... %s", a.Line, a.Command, a.Option)
}

// FindAbsoluteExpiries scans src for absolute expiries: the commands
// EXPIREAT and PEXPIREAT, and the options EXAT and PXAT (SET, GETEX) and
// ABSTTL (RESTORE), as string literals outside comments, in source order.
// Under the TIME rewrite alone these compare the virtual clock with Redis's
// real one (Options.Expiry maps them between the clocks). Relative
// expiries (EXPIRE, PEXPIRE, SET EX/PX) are not listed. An unlexable script
// gives the error.
func FindAbsoluteExpiries(src string) ([]AbsoluteExpiry, error) {
	bodyAt := shebangEnd(src)
	toks, err := luaLex(src[bodyAt:], 1+strings.Count(src[:bodyAt], "\n"))
	if err != nil {
		return nil, err
	}
	return absoluteExpiries(toks, callSites(toks)), nil
}

func absoluteExpiries(toks []luaToken, sites []callSite) []AbsoluteExpiry {
	var out []AbsoluteExpiry
	for i, t := range toks {
		if t.kind != tokString {
			continue
		}
		kw := strings.ToUpper(t.val)
		switch kw {
		case "EXPIREAT", "PEXPIREAT":
			out = append(out, AbsoluteExpiry{Line: t.line, Command: kw})
		case "EXAT", "PXAT", "ABSTTL":
			a := AbsoluteExpiry{Line: t.line, Option: kw}
			for _, c := range sites {
				if !c.dynamic && c.argTok < i && i < c.endTok {
					a.Command = strings.ToUpper(c.cmd)
				}
			}
			out = append(out, a)
		}
	}
	return out
}

// callSite is one use of redis.call or redis.pcall.
type callSite struct {
	pcall bool
	// start and end delimit "redis.call" in the body (bytes).
	start, end int
	// first is the index of the token `redis`.
	first int
	// cmd is the literal command; dynamic when it is not a string literal
	// (or the function is used as a value).
	cmd     string
	dynamic bool
	// argTok is the index of the command's token; endTok that of the
	// closing parenthesis (or of the string of a `f'...'` call).
	argTok, endTok int
}

// callSites finds `redis.call` / `redis.pcall` (not `x.redis.call`).
func callSites(toks []luaToken) []callSite {
	var out []callSite
	for i := 0; i+2 < len(toks); i++ {
		t := toks[i]
		if t.kind != tokName || t.val != "redis" || !toks[i+1].is(".") || toks[i+2].kind != tokName {
			continue
		}
		if i > 0 && (toks[i-1].is(".") || toks[i-1].is(":")) {
			continue
		}
		fn := toks[i+2].val
		if fn != "call" && fn != "pcall" {
			continue
		}
		c := callSite{pcall: fn == "pcall", start: t.pos, end: toks[i+2].pos + len(fn), first: i, dynamic: true}
		j := i + 3
		switch {
		case j < len(toks) && toks[j].kind == tokString: // redis.call'TIME'
			c.cmd, c.dynamic, c.argTok, c.endTok = toks[j].val, !toks[j].plain, j, j
		case j+1 < len(toks) && toks[j].is("("):
			if end := closing(toks, j); end > 0 {
				c.endTok = end
				if a := toks[j+1]; a.kind == tokString && a.plain && (toks[j+2].is(",") || toks[j+2].is(")")) {
					c.cmd, c.dynamic, c.argTok = a.val, false, j+1
				}
			}
		}
		out = append(out, c)
		i += 2
	}
	return out
}

// closing returns the index of the parenthesis closing toks[open], or -1.
func closing(toks []luaToken, open int) int {
	depth := 0
	for k := open; k < len(toks); k++ {
		switch {
		case toks[k].is("("):
			depth++
		case toks[k].is(")"):
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// timeResolution implements Script.Resolution's heuristic.
func timeResolution(toks []luaToken, sites []callSite, dynamic int) time.Duration {
	res := time.Duration(0)
	for _, c := range sites {
		if c.dynamic || !strings.EqualFold(c.cmd, "TIME") {
			continue
		}
		switch {
		case !readsOnlySeconds(toks, c):
			res = time.Microsecond
		case res == 0:
			res = time.Second
		}
	}
	if res != 0 && dynamic > 0 {
		res = time.Microsecond
	}
	return res
}

// readsOnlySeconds reports whether the TIME reply of c is provably used only
// as reply[1]: indexed [1] right away, or assigned to one variable whose
// every other use is NAME[1].
func readsOnlySeconds(toks []luaToken, c callSite) bool {
	after := c.endTok + 1
	if isIndex(toks, after, "1") {
		return true
	}
	// NAME = redis.call('TIME') with nothing after the call but a new statement
	if c.first < 2 || !toks[c.first-1].is("=") || toks[c.first-2].kind != tokName {
		return false
	}
	if c.first >= 3 && toks[c.first-3].is(",") {
		return false
	}
	if after < len(toks) && toks[after].kind == tokPunct && !toks[after].is(";") {
		return false
	}
	name := toks[c.first-2].val
	for k, t := range toks {
		if t.kind != tokName || t.val != name || k == c.first-2 {
			continue
		}
		if k > 0 && (toks[k-1].is(".") || toks[k-1].is(":")) {
			continue // a field of another table
		}
		if !isIndex(toks, k+1, "1") {
			return false
		}
	}
	return true
}

// isIndex reports whether toks[k:] starts with "[" n "]".
func isIndex(toks []luaToken, k int, n string) bool {
	return k+2 < len(toks) && toks[k].is("[") && toks[k+1].kind == tokNumber && toks[k+1].val == n && toks[k+2].is("]")
}
