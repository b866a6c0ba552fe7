package algorithms

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Placeholders are the names a script argument template may contain, in
// braces: "{now_us}". now_s and window_s are decimal seconds ("0.5",
// "1732240000.123456"); the others are integers.
var Placeholders = []string{"now_us", "now_ms", "now_s", "window_us", "window_ms", "window_s", "limit", "cost", "request_id"}

// Template is one parsed script argument: literal text and placeholders.
type Template struct {
	src   string
	parts []part
}

type part struct {
	lit  string
	name string // placeholder name, empty for a literal
}

// Values fill a Template.
type Values struct {
	Now       time.Time
	Window    time.Duration
	Limit     int64
	Cost      int64
	RequestID string
}

// ParseTemplate parses an argument template. "{name}" with a known
// placeholder name is replaced when filled; any other text, including braces
// that do not enclose a lower-case name (JSON such as `{"a":1}` or `[[10, 5]]`),
// is literal. An unknown lower-case name in braces ("{nwo_us}") is an
// error, since it is almost certainly a typo.
func ParseTemplate(s string) (Template, error) {
	t := Template{src: s}
	lit := strings.Builder{}
	for i := 0; i < len(s); {
		if s[i] == '{' {
			j := i + 1
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == '}' && j > i+1 {
				name := s[i+1 : j]
				if !isPlaceholder(name) {
					return Template{}, fmt.Errorf("unknown placeholder {%s} in %q (known: {%s})", name, s, strings.Join(Placeholders, "} {"))
				}
				if lit.Len() > 0 {
					t.parts = append(t.parts, part{lit: lit.String()})
					lit.Reset()
				}
				t.parts = append(t.parts, part{name: name})
				i = j + 1
				continue
			}
		}
		lit.WriteByte(s[i])
		i++
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	return t, nil
}

func isPlaceholder(name string) bool {
	for _, p := range Placeholders {
		if p == name {
			return true
		}
	}
	return false
}

// Uses reports whether the template contains any of the named placeholders.
func (t Template) Uses(names ...string) bool {
	for _, p := range t.parts {
		for _, n := range names {
			if p.name == n {
				return true
			}
		}
	}
	return false
}

// String returns the template as written.
func (t Template) String() string { return t.src }

// Fill returns the argument for v.
func (t Template) Fill(v Values) string {
	var b strings.Builder
	for _, p := range t.parts {
		switch p.name {
		case "":
			b.WriteString(p.lit)
		case "now_us":
			b.WriteString(strconv.FormatInt(v.Now.UnixMicro(), 10))
		case "now_ms":
			b.WriteString(strconv.FormatInt(v.Now.UnixMilli(), 10))
		case "now_s":
			b.WriteString(decimalSeconds(v.Now.UnixMicro()))
		case "window_us":
			b.WriteString(strconv.FormatInt(v.Window.Microseconds(), 10))
		case "window_ms":
			b.WriteString(strconv.FormatInt(v.Window.Milliseconds(), 10))
		case "window_s":
			b.WriteString(decimalSeconds(v.Window.Microseconds()))
		case "limit":
			b.WriteString(strconv.FormatInt(v.Limit, 10))
		case "cost":
			b.WriteString(strconv.FormatInt(v.Cost, 10))
		case "request_id":
			b.WriteString(v.RequestID)
		}
	}
	return b.String()
}

// decimalSeconds renders µs as seconds with no trailing zeros: 500000 ->
// "0.5", 10000000 -> "10", 1732240000123456 -> "1732240000.123456".
func decimalSeconds(us int64) string {
	neg := us < 0
	if neg {
		us = -us
	}
	s := strconv.FormatInt(us/1e6, 10)
	if frac := us % 1e6; frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}
