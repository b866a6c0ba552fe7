package clientside

// The string functions whose work a script could make unbounded, as Lua
// 5.1's manual defines them: the pattern functions (find, match, gmatch,
// gsub) on the matcher of pattern.go, which checks the run's ctx as it
// works; rep, format and table.concat, which refuse a result longer than
// MaxString before building it.

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// startAt is Lua 5.1's start position init (1-based, negative from the
// end) of a string of length n as a 0-based index within 0..n.
func startAt(init, n int) int {
	if init < 0 {
		init = n + init + 1
	}
	init--
	if init < 0 {
		return 0
	}
	return min(init, n)
}

func strFind(L *lua.LState) int { return findOrMatch(L, true) }

func strMatch(L *lua.LState) int { return findOrMatch(L, false) }

// findOrMatch is string.find (find) or string.match.
func findOrMatch(L *lua.LState, find bool) int {
	src, pat := L.CheckString(1), L.CheckString(2)
	init := startAt(L.OptInt(3, 1), len(src))
	if find && (L.ToBool(4) || !strings.ContainsAny(pat, specialChars)) {
		if i := strings.Index(src[init:], pat); i >= 0 {
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(pat)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	p := 0
	anchored := len(pat) > 0 && pat[0] == '^'
	if anchored {
		p = 1
	}
	m := newMatcher(L, src, pat)
	for s := init; s <= len(src); s++ {
		m.level = 0
		if e := m.match(s, p); e != -1 {
			if find {
				L.Push(lua.LNumber(s + 1))
				L.Push(lua.LNumber(e))
				return m.pushCaptures(s, e, false) + 2
			}
			return m.pushCaptures(s, e, true)
		}
		if anchored {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

// strGmatch is string.gmatch: an iterator over the matches ('^' is not
// an anchor here, as in Lua 5.1).
func strGmatch(L *lua.LState) int {
	src, pat := L.CheckString(1), L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		m := newMatcher(L, src, pat)
		for s := pos; s <= len(src); s++ {
			m.level = 0
			if e := m.match(s, 0); e != -1 {
				pos = e
				if e == s {
					pos++ // an empty match: on by one
				}
				return m.pushCaptures(s, e, true)
			}
		}
		pos = len(src) + 1
		return 0
	}))
	return 1
}

// strGsub is string.gsub: repl a string (%0-%9 for captures, %% for %),
// a table (indexed by the first capture) or a function (called with the
// captures); false or nil keeps the match.
func strGsub(L *lua.LState) int {
	src, pat := L.CheckString(1), L.CheckString(2)
	repl := L.Get(3)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	limit := L.OptInt(4, len(src)+1)
	p := 0
	anchored := len(pat) > 0 && pat[0] == '^'
	if anchored {
		p = 1
	}
	m := newMatcher(L, src, pat)
	var b strings.Builder
	add := func(s string) {
		if b.Len()+len(s) > MaxString {
			tooLong(L, "string.gsub", float64(b.Len())+float64(len(s)))
		}
		b.WriteString(s)
	}
	n, s := 0, 0
	for n < limit {
		m.level = 0
		e := m.match(s, p)
		if e != -1 {
			n++
			add(m.replacement(repl, s, e))
		}
		switch {
		case e != -1 && e > s:
			s = e
		case s < len(src):
			add(src[s : s+1])
			s++
		default:
			limit = n // the end: stop
		}
		if anchored {
			break
		}
	}
	add(src[min(s, len(src)):])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// replacement is what the match src[s:e] becomes in gsub.
func (m *matcher) replacement(repl lua.LValue, s, e int) string {
	L := m.L
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		t := lua.LVAsString(r)
		if strings.IndexByte(t, '%') < 0 {
			return t
		}
		var b strings.Builder
		for i := 0; i < len(t); i++ {
			m.tick.step()
			j := strings.IndexByte(t[i:], '%')
			if j < 0 || i+j+1 == len(t) {
				b.WriteString(t[i:])
				break
			}
			b.WriteString(t[i : i+j])
			i += j + 1
			switch d := t[i]; {
			case d == '0':
				b.WriteString(m.src[s:e])
			case '1' <= d && d <= '9':
				b.WriteString(lua.LVAsString(m.captureValue(int(d-'1'), s, e)))
			default:
				b.WriteByte(d)
			}
			if b.Len() > MaxString {
				tooLong(L, "string.gsub", float64(b.Len()))
			}
		}
		return b.String()
	case *lua.LTable:
		v = L.GetTable(r, m.captureValue(0, s, e))
	case *lua.LFunction:
		top := L.GetTop()
		L.Push(r)
		n := m.pushCaptures(s, e, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.SetTop(top)
	}
	switch v.Type() {
	case lua.LTNil:
		return m.src[s:e]
	case lua.LTBool:
		if v == lua.LFalse {
			return m.src[s:e]
		}
	case lua.LTString, lua.LTNumber:
		return lua.LVAsString(v)
	}
	L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	return ""
}

// strRep is string.rep(s, n).
func strRep(L *lua.LState) int {
	s, n := L.CheckString(1), L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if size := float64(len(s)) * float64(n); size > MaxString {
		tooLong(L, "string.rep", size)
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// tableConcat is table.concat(t [, sep [, i [, j]]]).
func tableConcat(L *lua.LState) int {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	i, j := L.OptInt(3, 1), L.OptInt(4, t.Len())
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	tk := tick{L: L}
	size := 0.0
	for k := i; k <= j; k++ {
		tk.step()
		v := t.RawGetInt(k)
		if !lua.LVCanConvToString(v) {
			L.RaiseError("invalid value (%s) at index %d in table for 'concat'", v.Type().String(), k)
		}
		size += float64(len(lua.LVAsString(v)))
		if k < j {
			size += float64(len(sep))
		}
		if size > MaxString {
			tooLong(L, "table.concat", size)
		}
	}
	var b strings.Builder
	b.Grow(int(size))
	for k := i; k <= j; k++ {
		b.WriteString(lua.LVAsString(t.RawGetInt(k)))
		if k < j {
			b.WriteString(sep)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// formatSlack bounds what one conversion adds besides its argument's
// text: a width or precision of at most 99 and a number's digits (a
// float's %f has at most 309 before the point).
const formatSlack = 99 + 99 + 330

// strFormat is string.format with Lua 5.1's rules checked first (the
// conversions c d i o u x X e E f g G q s and %%, flags -+ #0, a width
// and precision of at most two digits, an argument for every conversion)
// and its result's length bounded before format (gopher-lua's) builds it.
// A %s argument that is not a string or number is converted by tostring
// first, once.
func strFormat(format lua.LValue) lua.LGFunction {
	return func(L *lua.LState) int {
		f := L.CheckString(1)
		size := float64(len(f))
		arg := 1
		for i := 0; i < len(f); i++ {
			if f[i] != '%' {
				continue
			}
			i++
			if i < len(f) && f[i] == '%' {
				continue
			}
			start := i
			for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
				i++
			}
			if i-start > 5 {
				L.RaiseError("invalid format (repeated flags)")
			}
			digits := func() {
				d := 0
				for i < len(f) && '0' <= f[i] && f[i] <= '9' {
					i++
					d++
				}
				if d > 2 {
					L.RaiseError("invalid format (width or precision too long)")
				}
			}
			digits()
			if i < len(f) && f[i] == '.' {
				i++
				digits()
			}
			if i >= len(f) || strings.IndexByte("cdiouxXeEfgGqs", f[i]) < 0 {
				verb := "%"
				if i < len(f) {
					verb += f[i : i+1]
				}
				L.RaiseError("invalid option '%s' to 'format'", verb)
			}
			arg++
			if arg > L.GetTop() {
				L.ArgError(arg, "no value")
			}
			v := L.Get(arg)
			text := 0
			switch f[i] {
			case 's':
				if !lua.LVCanConvToString(v) {
					v = lua.LString(L.ToStringMeta(v).String())
					L.Replace(arg, v)
				}
				text = len(lua.LVAsString(v))
			case 'q':
				text = 4*len(lua.LVAsString(v)) + 2
			}
			size += float64(text) + formatSlack
		}
		if size > MaxString {
			tooLong(L, "string.format", size)
		}
		top := L.GetTop()
		L.Push(format)
		for k := 1; k <= top; k++ {
			L.Push(L.Get(k))
		}
		L.Call(top, 1)
		return 1
	}
}
