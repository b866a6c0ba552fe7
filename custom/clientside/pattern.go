package clientside

// Lua 5.1 patterns (manual §5.4.1), matched by backtracking with a budget:
// every step ticks, so a pattern that backtracks for ever
// (string.rep('a', 30000) against '.-.-.-.-.-b') stops with the run's ctx.
// Errors (a malformed pattern, a done ctx) are raised in the Lua state.
//
// Items: a character class (x, ., %a %c %d %l %p %s %u %w %x %z and their
// upper-case complements, %<non-alphanumeric> for that character, [set]
// and [^set] with ranges and classes), each optionally followed by *, +,
// - or ?; %1-%9 (a capture again); %bxy (balanced x...y); %f[set] (a
// frontier); ( ) captures and () position captures; ^ at the start and $
// at the end anchor.

import (
	lua "github.com/yuin/gopher-lua"
)

const (
	maxCaptures  = 32
	maxPatDepth  = 200 // nested matches (one per quantified item or capture) before "pattern too complex"
	capUnclosed  = -1
	capPosition  = -2
	specialChars = "^$*+?.([%-"
)

type capture struct{ start, len int }

type matcher struct {
	L        *lua.LState
	src, pat string
	level    int
	caps     [maxCaptures]capture
	depth    int
	tick     tick
}

func newMatcher(L *lua.LState, src, pat string) *matcher {
	return &matcher{L: L, src: src, pat: pat, tick: tick{L: L}}
}

func (m *matcher) fail(msg string) {
	m.L.RaiseError("%s", msg)
}

// match returns the end of a match of pat[p:] at src[s:], or -1.
func (m *matcher) match(s, p int) int {
	m.depth++
	if m.depth > maxPatDepth {
		m.fail("pattern too complex")
	}
	defer func() { m.depth-- }()
	for {
		m.tick.step()
		if p == len(m.pat) {
			return s
		}
		switch m.pat[p] {
		case '(':
			if p+1 < len(m.pat) && m.pat[p+1] == ')' {
				return m.openCapture(s, p+2, capPosition)
			}
			return m.openCapture(s, p+1, capUnclosed)
		case ')':
			return m.closeCapture(s, p+1)
		case '$':
			if p+1 == len(m.pat) {
				if s == len(m.src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 < len(m.pat) {
				switch c := m.pat[p+1]; {
				case c == 'b':
					s = m.balanced(s, p+2)
					if s == -1 {
						return -1
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(m.pat) || m.pat[p] != '[' {
						m.fail("missing '[' after '%f' in pattern")
					}
					end := m.classEnd(p)
					var prev, cur byte
					if s > 0 {
						prev = m.src[s-1]
					}
					if s < len(m.src) {
						cur = m.src[s]
					}
					if m.inSet(prev, p, end-1) || !m.inSet(cur, p, end-1) {
						return -1
					}
					p = end
					continue
				case c >= '0' && c <= '9':
					s = m.again(s, c)
					if s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		}
		// a single character class, maybe quantified
		end := m.classEnd(p)
		ok := s < len(m.src) && m.single(m.src[s], p, end)
		if end < len(m.pat) {
			switch m.pat[end] {
			case '?':
				if ok {
					if r := m.match(s+1, end+1); r != -1 {
						return r
					}
				}
				p = end + 1
				continue
			case '*':
				return m.longest(s, p, end)
			case '+':
				if !ok {
					return -1
				}
				return m.longest(s+1, p, end)
			case '-':
				return m.shortest(s, p, end)
			}
		}
		if !ok {
			return -1
		}
		s, p = s+1, end
	}
}

// longest matches as many characters of class pat[p:end] as it can from
// s, then gives them back one at a time until the rest matches.
func (m *matcher) longest(s, p, end int) int {
	n := 0
	for s+n < len(m.src) && m.single(m.src[s+n], p, end) {
		m.tick.step()
		n++
	}
	for ; n >= 0; n-- {
		if r := m.match(s+n, end+1); r != -1 {
			return r
		}
	}
	return -1
}

// shortest tries the rest first, then one more character of the class.
func (m *matcher) shortest(s, p, end int) int {
	for {
		if r := m.match(s, end+1); r != -1 {
			return r
		}
		if s < len(m.src) && m.single(m.src[s], p, end) {
			s++
			continue
		}
		return -1
	}
}

func (m *matcher) openCapture(s, p, what int) int {
	if m.level >= maxCaptures {
		m.fail("too many captures")
	}
	m.caps[m.level] = capture{s, what}
	m.level++
	r := m.match(s, p)
	if r == -1 {
		m.level--
	}
	return r
}

func (m *matcher) closeCapture(s, p int) int {
	l := -1
	for i := m.level - 1; i >= 0; i-- {
		if m.caps[i].len == capUnclosed {
			l = i
			break
		}
	}
	if l < 0 {
		m.fail("invalid pattern capture")
	}
	m.caps[l].len = s - m.caps[l].start
	r := m.match(s, p)
	if r == -1 {
		m.caps[l].len = capUnclosed
	}
	return r
}

// balanced matches %b with its two characters at pat[p:p+2].
func (m *matcher) balanced(s, p int) int {
	if p+1 >= len(m.pat) {
		m.fail("unbalanced pattern")
	}
	if s >= len(m.src) || m.src[s] != m.pat[p] {
		return -1
	}
	open, close := m.pat[p], m.pat[p+1]
	depth := 1
	for i := s + 1; i < len(m.src); i++ {
		m.tick.step()
		switch m.src[i] {
		case close:
			depth--
			if depth == 0 {
				return i + 1
			}
		case open:
			depth++
		}
	}
	return -1
}

// again matches capture c ('1'...'9') once more at s.
func (m *matcher) again(s int, c byte) int {
	l := int(c - '1')
	if l < 0 || l >= m.level || m.caps[l].len == capUnclosed {
		m.fail("invalid capture index")
	}
	cp := m.caps[l]
	if cp.len == capPosition {
		cp.len = 0
	}
	if len(m.src)-s >= cp.len && m.src[cp.start:cp.start+cp.len] == m.src[s:s+cp.len] {
		return s + cp.len
	}
	return -1
}

// classEnd is the index after the single character class at pat[p].
func (m *matcher) classEnd(p int) int {
	c := m.pat[p]
	p++
	switch c {
	case '%':
		if p >= len(m.pat) {
			m.fail("malformed pattern (ends with '%')")
		}
		return p + 1
	case '[':
		if p < len(m.pat) && m.pat[p] == '^' {
			p++
		}
		for { // the first character is in the set even if it is ']'
			if p >= len(m.pat) {
				m.fail("malformed pattern (missing ']')")
			}
			c := m.pat[p]
			p++
			if c == '%' {
				p++
			}
			if p >= len(m.pat) {
				m.fail("malformed pattern (missing ']')")
			}
			if m.pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

// single says whether c is in the class pat[p:end].
func (m *matcher) single(c byte, p, end int) bool {
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return classHas(m.pat[p+1], c)
	case '[':
		return m.inSet(c, p, end-1)
	}
	return m.pat[p] == c
}

// inSet says whether c is in the set pat[p] == '[' ... pat[last] == ']'.
func (m *matcher) inSet(c byte, p, last int) bool {
	in := true
	p++
	if m.pat[p] == '^' {
		in = false
		p++
	}
	for ; p < last; p++ {
		switch {
		case m.pat[p] == '%' && p+1 < last:
			p++
			if classHas(m.pat[p], c) {
				return in
			}
		case p+2 < last && m.pat[p+1] == '-':
			if m.pat[p] <= c && c <= m.pat[p+2] {
				return in
			}
			p += 2
		case m.pat[p] == c:
			return in
		}
	}
	return !in
}

// classHas says whether c is in the class %cl (C locale).
func classHas(cl, c byte) bool {
	var in bool
	switch cl | 0x20 {
	case 'a':
		in = isAlpha(c)
	case 'c':
		in = c < 32 || c == 127
	case 'd':
		in = '0' <= c && c <= '9'
	case 'l':
		in = 'a' <= c && c <= 'z'
	case 'p':
		in = c > 32 && c < 127 && !isAlpha(c) && !('0' <= c && c <= '9')
	case 's':
		in = c == ' ' || ('\t' <= c && c <= '\r')
	case 'u':
		in = 'A' <= c && c <= 'Z'
	case 'w':
		in = isAlpha(c) || ('0' <= c && c <= '9')
	case 'x':
		in = ('0' <= c && c <= '9') || ('a' <= c|0x20 && c|0x20 <= 'f')
	case 'z':
		in = c == 0
	default:
		return cl == c
	}
	if 'A' <= cl && cl <= 'Z' {
		return !in
	}
	return in
}

func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// captureValue is capture i of a match src[s:e]: the whole match when
// the pattern has no captures and i is 0.
func (m *matcher) captureValue(i, s, e int) lua.LValue {
	if i >= m.level {
		if i != 0 {
			m.fail("invalid capture index")
		}
		return lua.LString(m.src[s:e])
	}
	cp := m.caps[i]
	switch cp.len {
	case capUnclosed:
		m.fail("unfinished capture")
	case capPosition:
		return lua.LNumber(cp.start + 1)
	}
	return lua.LString(m.src[cp.start : cp.start+cp.len])
}

// pushCaptures pushes the captures of a match src[s:e] (the whole match
// when there are none and whole is set) and returns how many.
func (m *matcher) pushCaptures(s, e int, whole bool) int {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	for i := 0; i < n; i++ {
		m.L.Push(m.captureValue(i, s, e))
	}
	return n
}
