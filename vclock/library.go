package vclock

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Function libraries on the virtual clock.
//
// A library for FUNCTION LOAD ("#!lua name=mylib", then
// redis.register_function('f', function(keys, args) ... end) or the table
// form redis.register_function{function_name = 'f', callback = cb,
// flags = {...}}) runs once when loaded and registers its callbacks; each
// FCALL f numkeys key... arg... then calls one callback with keys and args
// tables. RewriteLibrary gives such a library the semantics Rewrite gives
// an EVAL script, with the same emitter: the call sites in the library get
// the same edits in place, and the prefix Rewrite would put in front of a
// script's body runs at the start of every FCALL instead, before the
// user's callback; the expiry forms' suffix runs after it. One line goes
// in front of the library's first code line (after the shebang), so the
// library keeps its line numbers. It:
//
//   - declares, at the library's top, the names the prefix declares (the
//     virtual time, the real redis.call, the key notes, the helpers), so
//     that the rewritten call sites anywhere in the library, which name
//     them, see them as upvalues;
//   - defines the per-call prefix as a function of (KEYS, ARGV), the FCALL's
//     keys and args tables, that sets those names anew and pops the
//     appended time (and the expiry call's key and arguments) off the
//     tables, so the callback sees its keys and args as without them;
//   - shadows redis with a table whose register_function wraps each
//     callback in that prefix (and the expiry forms' record of deadlines
//     after it), and puts Options.FunctionPrefix in front of each function
//     name; every other field reads the global redis at the time of the
//     access (the library's load-time API while it loads, the full API
//     during an FCALL, where a call whose command is not a literal goes
//     through the prefix's wrapper of call and pcall).
//
// Measured on Redis 7.0.15 (tests in library_test.go): the global redis a
// callback reads during an FCALL is another table than the one the library
// saw while loading (which has register_function and no call); a library's
// local variables keep their values from one FCALL to the next (the prefix
// sets every one it uses at each call, so nothing of a call leaks into the
// next); errors keep the library's line numbers ("user_function:3: ...");
// while a library loads, its globals hold redis alone (no setmetatable,
// type, pairs: the line in front uses none of them), and that redis holds
// only register_function, log, the LOG_* levels, REDIS_VERSION and
// REDIS_VERSION_NUM (reading another field raises an error; through the
// shadowing table it gives nil). FCALLs are never nested (a function
// cannot call FCALL), so one set of upvalues serves every function of the
// library.
//
// What differs from the library as written: in a key-expiry form a
// function flagged no-writes loses the flag (the emulation writes); an
// error Redis raises in register_function itself names the first code
// line; a callback that is not a function is found at its first FCALL,
// not when the library loads.

// Library is a function library rewritten by RewriteLibrary.
type Library struct {
	// Script holds the rewritten library (Source: FUNCTION LOAD it) and
	// what the scan of the whole library found: TimeCalls, DynamicCalls,
	// Resolution, AbsoluteExpiries. Script.Args gives the args of an
	// FCALL at a virtual time, as for a script.
	Script
	// Name is the library's name in the rewritten shebang
	// (Options.Library, or the source's own).
	Name string
	// Functions are the names the library registers as string literals
	// (LibraryFunctions), as written; each loads as FunctionPrefix + name.
	Functions []string
	// FunctionPrefix is Options.FunctionPrefix.
	FunctionPrefix string
}

// Function returns the name under which the rewritten library registers
// the function the source registers as name: FunctionPrefix + name.
func (l Library) Function(name string) string { return l.FunctionPrefix + name }

// ErrNotLibrary is returned by RewriteLibrary for a source without a
// "#!lua name=..." first line.
var ErrNotLibrary = errors.New("not a function library: the first line must be #!lua name=<library>")

// libraryNameRE is what Redis accepts as a library or function name.
var libraryNameRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// RewriteLibrary rewrites src, the source of a function library for
// FUNCTION LOAD, as o asks (see Options and the comment above): with
// o.Time the TIME calls of its functions answer the virtual time appended
// as the FCALL's last arg (Script.Args), with o.Expiry their keys expire
// on the virtual clock (the companion key appended to the FCALL's keys, the
// three expiry arguments to its args, as for a script: see expiry.go). A
// key-expiry form is the lean one only when every call site of the whole
// library allows it. o.Library renames the library, o.FunctionPrefix its
// functions ("" keeps each).
//
// Errors: ErrNotLibrary; a Library or FunctionPrefix that is not letters,
// digits and underscores (Redis refuses such names); an unterminated string
// or long comment. Safe for concurrent use.
func RewriteLibrary(src string, o Options) (Library, error) {
	table := o.Expiry == ExpiryTable
	withTime := o.Time || o.Expiry == NoExpiry || table
	expiry := o.Expiry != NoExpiry && !table
	name, err := libraryName(src)
	if err != nil {
		return Library{}, err
	}
	if o.Library != "" && !libraryNameRE.MatchString(o.Library) {
		return Library{}, fmt.Errorf("vclock: library name %q: only letters, digits and _ are allowed", o.Library)
	}
	if o.FunctionPrefix != "" && !libraryNameRE.MatchString(o.FunctionPrefix) {
		return Library{}, fmt.Errorf("vclock: function prefix %q: only letters, digits and _ are allowed", o.FunctionPrefix)
	}
	bodyAt := shebangEnd(src)
	body := src[bodyAt:]
	toks, err := luaLex(body, 2)
	if err != nil {
		return Library{}, err
	}
	sites := callSites(toks)
	out := Library{Script: Script{AbsoluteExpiries: absoluteExpiries(toks, sites)}, Name: name,
		Functions: registeredFunctions(toks), FunctionPrefix: o.FunctionPrefix}
	if o.Library != "" {
		out.Name = o.Library
	}
	lean := expiry && o.Expiry == ExpiryLean && leanExpiry(body, toks, sites)
	edits := siteEditsAll(body, toks, sites, table, withTime, expiry, lean, &out.Script)
	uses := usesOf(edits)
	var stmts []string
	record := ""
	switch {
	case table:
		stmts = tableStatements(uses)
	case lean:
		// (-1, -1): always pop, the callback may read its tables any way
		stmts, record = leanStatements(withTime, -1, -1, uses), leanRecord
	case expiry:
		stmts, record = expiryStatements(withTime), expiryRecord
	default:
		stmts = timeStatements(uses)
	}
	perCall, names, err := hoist(strings.Join(stmts, " "))
	if err != nil {
		return Library{}, fmt.Errorf("vclock: the library prefix: %w", err) // a defect of this package
	}
	var b strings.Builder
	b.WriteString(renameShebang(src[:bodyAt], out.Name))
	if !strings.HasSuffix(src[:bodyAt], "\n") {
		b.WriteString("\n") // a shebang and nothing else
	}
	b.WriteString(libraryPrefix(perCall, record, o.FunctionPrefix, names))
	applyEdits(&b, body, edits)
	out.Source = b.String()
	out.Resolution = timeResolution(toks, sites, out.DynamicCalls)
	return out, nil
}

// libraryPrefix is the one line in front of the library's first code
// line (see the comment at the top): perCall is the prefix's Lua with its
// declarations made assignments (hoist) of names, record the expiry
// form's record after the callback ("" for the TIME rewrite alone).
func libraryPrefix(perCall, record, fnPrefix string, names []string) string {
	call := "local e = __ratelab_enter(keys, args); if e ~= nil then return e end; return f(keys, args)"
	flags := ""
	if record != "" {
		call = "local e = __ratelab_enter(keys, args); if e ~= nil then return e end; return __ratelab_leave(keys, (f(keys, args)))"
		// the emulation writes (the companion, the safety TTLs): a
		// function flagged no-writes loses the flag
		flags = "local fl = t.flags; if fl then local n, i = {}, 1; while fl[i] ~= nil do if fl[i] ~= 'no-writes' then n[#n + 1] = fl[i] end; i = i + 1 end; t.flags = n end;"
	}
	l := []string{
		// the global redis, read when called (it differs between loading
		// and an FCALL); the library's redis, with what a library may
		// read while it loads (no function of Lua's is there: the rest
		// comes at the first FCALL, by a metatable)
		"local __ratelab_G = function() return redis end; local __ratelab_reg = redis.register_function;",
		"local __ratelab_lib = {log = redis.log, LOG_DEBUG = redis.LOG_DEBUG, LOG_VERBOSE = redis.LOG_VERBOSE, LOG_NOTICE = redis.LOG_NOTICE, LOG_WARNING = redis.LOG_WARNING, REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM};",
		"local " + strings.Join(append(names, "__ratelab_shim", "__ratelab_ready"), ", ") + ";",
		"local function __ratelab_enter(KEYS, ARGV) if not __ratelab_ready then __ratelab_ready = true;",
		"setmetatable(__ratelab_lib, {__index = function(_, k) local s = __ratelab_shim; if s ~= nil then return s[k] end; return __ratelab_G()[k] end}) end;",
		perCall + " end;",
	}
	if record != "" {
		l = append(l, "local function __ratelab_leave(KEYS, __ratelab_r) "+record+" return __ratelab_r end;")
	}
	l = append(l,
		"local redis = __ratelab_lib; __ratelab_lib.register_function = function(a, cb) local t = a; if cb ~= nil then t = {function_name = a, callback = cb} end;",
		"local f = t.callback; if f then t.callback = function(keys, args) "+call+" end end; "+flags,
		"if t.function_name then t.function_name = '"+fnPrefix+"' .. t.function_name end; return __ratelab_reg(t) end; ",
	)
	return strings.Join(l, " ")
}

// hoist turns the top-level local declarations of text (a prefix's Lua)
// into assignments, and returns the names they declared (for one local
// declaration at the library's top). `local function f(` becomes
// `f = function(`, `local a, b = x` becomes `a, b = x`, `local a, b`
// becomes `a, b = nil`; the shadowing `local redis = ...` becomes
// `__ratelab_shim = ...` (the library's redis reads it during a call).
// Locals inside functions and blocks are left alone.
func hoist(text string) (string, []string, error) {
	toks, err := luaLex(text, 1)
	if err != nil {
		return "", nil, err
	}
	var edits []edit
	var names []string
	depth := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tokName {
			continue
		}
		switch t.val {
		case "function", "if", "do", "repeat":
			depth++
		case "end", "until":
			depth--
		case "local":
			if depth != 0 || i+1 >= len(toks) {
				continue
			}
			if n := toks[i+1]; n.kind == tokName && n.val == "function" && i+2 < len(toks) {
				f := toks[i+2]
				names = append(names, f.val)
				edits = append(edits, edit{pos: t.pos, del: f.pos + len(f.val) - t.pos, text: f.val + " = function"})
				continue // the function token is read next
			}
			j := i + 1
			var list []string
			for ; j < len(toks) && toks[j].kind == tokName; j += 2 {
				v := toks[j].val
				if v == "redis" {
					v = "__ratelab_shim"
				} else {
					names = append(names, v)
				}
				list = append(list, v)
				if j+1 >= len(toks) || !toks[j+1].is(",") {
					break
				}
			}
			if len(list) == 0 {
				return "", nil, fmt.Errorf("local without a name at byte %d", t.pos)
			}
			last := toks[j]
			repl := strings.Join(list, ", ")
			if j+1 >= len(toks) || !toks[j+1].is("=") {
				repl += " = nil"
			}
			edits = append(edits, edit{pos: t.pos, del: last.pos + len(last.val) - t.pos, text: repl})
			i = j
		}
	}
	var b strings.Builder
	applyEdits(&b, text, edits)
	return b.String(), names, nil
}

// libraryName returns the name of the "#!lua name=..." first line of src,
// or ErrNotLibrary.
func libraryName(src string) (string, error) {
	line := strings.TrimRight(src[:shebangEnd(src)], "\r\n")
	f := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(f) == 0 || f[0] != "lua" {
		return "", ErrNotLibrary
	}
	for _, x := range f[1:] {
		if v, ok := strings.CutPrefix(x, "name="); ok && v != "" {
			return v, nil
		}
	}
	return "", ErrNotLibrary
}

// renameShebang returns the shebang line with its name= set to name.
func renameShebang(line, name string) string {
	f := strings.Fields(line)
	for i, x := range f {
		if strings.HasPrefix(x, "name=") {
			f[i] = "name=" + name
		}
	}
	end := ""
	if strings.HasSuffix(line, "\n") {
		end = "\n"
	}
	return strings.Join(f, " ") + end
}

// IsLibrary reports whether src starts with a function library's
// "#!lua name=..." line (FUNCTION LOAD, not EVAL).
func IsLibrary(src string) bool {
	_, err := libraryName(src)
	return err == nil
}

// LibraryFunctions reads src, a function library, statically: its name
// and the function names it registers as string literals
// (redis.register_function('f', ...), redis.register_function{function_name
// = 'f', ...}), in source order, each once. A name built at run time is
// not listed. Errors: ErrNotLibrary; an unlexable source.
func LibraryFunctions(src string) (name string, functions []string, err error) {
	if name, err = libraryName(src); err != nil {
		return "", nil, err
	}
	toks, err := luaLex(src[shebangEnd(src):], 2)
	if err != nil {
		return "", nil, err
	}
	return name, registeredFunctions(toks), nil
}

// registeredFunctions implements LibraryFunctions' read of the tokens.
func registeredFunctions(toks []luaToken) []string {
	var out []string
	add := func(n string) {
		for _, o := range out {
			if o == n {
				return
			}
		}
		out = append(out, n)
	}
	for i := 0; i+3 < len(toks); i++ {
		if toks[i].kind != tokName || toks[i].val != "redis" || !toks[i+1].is(".") || toks[i+2].kind != tokName || toks[i+2].val != "register_function" {
			continue
		}
		if i > 0 && (toks[i-1].is(".") || toks[i-1].is(":")) {
			continue
		}
		j := i + 3
		if toks[j].is("(") && j+1 < len(toks) {
			if toks[j+1].kind == tokString {
				add(toks[j+1].val)
				continue
			}
			j++
		}
		if !toks[j].is("{") {
			continue
		}
		depth := 0
		for k := j; k < len(toks); k++ {
			switch t := toks[k]; {
			case t.is("{") || t.is("(") || t.is("["):
				depth++
			case t.is("}") || t.is(")") || t.is("]"):
				depth--
			case depth == 1 && t.kind == tokName && t.val == "function_name" && k+2 < len(toks) && toks[k+1].is("=") && toks[k+2].kind == tokString:
				add(toks[k+2].val)
			}
			if depth == 0 {
				break
			}
		}
	}
	return out
}

// RenameLibrary returns src, a function library, loading under the name
// library with prefix in front of every function name it registers (see
// Options.Library and Options.FunctionPrefix) and otherwise as written:
// its functions read Redis's own TIME, and its FCALLs take no extra key
// or arg. The same line in front of the first code line as RewriteLibrary
// puts there, without the clock. Errors as RewriteLibrary's.
func RenameLibrary(src, library, prefix string) (Library, error) {
	name, err := libraryName(src)
	if err != nil {
		return Library{}, err
	}
	for _, n := range []string{library, prefix} {
		if n != "" && !libraryNameRE.MatchString(n) {
			return Library{}, fmt.Errorf("vclock: library name or function prefix %q: only letters, digits and _ are allowed", n)
		}
	}
	bodyAt := shebangEnd(src)
	toks, err := luaLex(src[bodyAt:], 2)
	if err != nil {
		return Library{}, err
	}
	out := Library{Name: name, Functions: registeredFunctions(toks), FunctionPrefix: prefix}
	if library != "" {
		out.Name = library
	}
	sites := callSites(toks)
	out.AbsoluteExpiries = absoluteExpiries(toks, sites)
	var b strings.Builder
	b.WriteString(renameShebang(src[:bodyAt], out.Name))
	if !strings.HasSuffix(src[:bodyAt], "\n") {
		b.WriteString("\n")
	}
	b.WriteString(libraryPrefix("", "", prefix, nil))
	b.WriteString(src[bodyAt:])
	out.Source = b.String()
	return out, nil
}
