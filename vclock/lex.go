package vclock

import (
	"errors"
	"fmt"
	"strings"
)

// A minimal Lua 5.1 lexer: enough to tell code from comments and strings.

type tokKind int

const (
	tokName tokKind = iota
	tokString
	tokNumber
	tokPunct
)

type luaToken struct {
	kind tokKind
	// val is the name, the number's text, the punctuation character, or a
	// string literal's value (escapes decoded when plain).
	val string
	// plain: a quoted string without escapes, or a long string; its val is exact.
	plain bool
	pos   int // byte offset in the lexed text
	line  int // 1-based line
}

func (t luaToken) is(p string) bool { return t.kind == tokPunct && t.val == p }

// luaLex splits src into tokens, skipping whitespace and comments; line is
// the line number of src's first line.
func luaLex(src string, line int) ([]luaToken, error) {
	var toks []luaToken
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "--"):
			if lvl, ok := longOpen(src[i+2:]); ok {
				end, err := longClose(src, i+2+lvl+2, lvl)
				if err != nil {
					return nil, fmt.Errorf("virtual time: line %d: unfinished long comment", line)
				}
				line += strings.Count(src[i:end], "\n")
				i = end
				continue
			}
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '[':
			if lvl, ok := longOpen(src[i:]); ok {
				start := i + lvl + 2
				end, err := longClose(src, start, lvl)
				if err != nil {
					return nil, fmt.Errorf("virtual time: line %d: unfinished long string", line)
				}
				v := src[start : end-lvl-2]
				v = strings.TrimPrefix(strings.TrimPrefix(v, "\r"), "\n") // Lua skips a first newline
				toks = append(toks, luaToken{kind: tokString, val: v, plain: true, pos: i, line: line})
				line += strings.Count(src[i:end], "\n")
				i = end
				continue
			}
			toks = append(toks, luaToken{kind: tokPunct, val: "[", pos: i, line: line})
			i++
		case c == '"' || c == '\'':
			j, esc := i+1, false
			var val strings.Builder
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\n' {
					return nil, fmt.Errorf("virtual time: line %d: unfinished string", line)
				}
				if src[j] == '\\' {
					esc = true
					j++
					if j < len(src) && src[j] == '\n' {
						line++
					}
					continue
				}
				val.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, fmt.Errorf("virtual time: line %d: unfinished string", line)
			}
			toks = append(toks, luaToken{kind: tokString, val: val.String(), plain: !esc, pos: i, line: line})
			i = j + 1
		case isNameStart(c):
			j := i
			for j < len(src) && (isNameStart(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, luaToken{kind: tokName, val: src[i:j], pos: i, line: line})
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := i
			for j < len(src) && (isNameStart(src[j]) || isDigit(src[j]) || src[j] == '.' ||
				((src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(src[i:], "0x"))) {
				j++
			}
			toks = append(toks, luaToken{kind: tokNumber, val: src[i:j], pos: i, line: line})
			i = j
		default:
			toks = append(toks, luaToken{kind: tokPunct, val: string(c), pos: i, line: line})
			i++
		}
	}
	return toks, nil
}

// longOpen reports whether s starts with a long bracket "[", "="*lvl, "[".
func longOpen(s string) (lvl int, ok bool) {
	if !strings.HasPrefix(s, "[") {
		return 0, false
	}
	for lvl = 1; lvl < len(s) && s[lvl] == '='; lvl++ {
	}
	if lvl < len(s) && s[lvl] == '[' {
		return lvl - 1, true
	}
	return 0, false
}

// longClose returns the offset just past "]" "="*lvl "]" at or after from.
func longClose(s string, from, lvl int) (int, error) {
	closer := "]" + strings.Repeat("=", lvl) + "]"
	k := strings.Index(s[min(from, len(s)):], closer)
	if k < 0 {
		return 0, errors.New("unfinished")
	}
	return from + k + len(closer), nil
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
