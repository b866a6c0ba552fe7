package custom

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Placeholders are the variables a template may name, alone in braces
// ("{now_us}") or inside an expression ("{floor(now_ms / window_ms)}"):
//
//	now_us, now_ms  the request's time, integer µs / ms since the Unix epoch
//	now_s           the request's time in seconds: "1732240000.123456" alone,
//	                a float64 inside an expression
//	window_us, window_ms  the limit's window, integer µs / ms
//	window_s        the window in seconds: "0.5" alone, a float64 in an expression
//	limit           requests allowed per window (integer)
//	cost            the request's cost (integer)
//	request_id      a string unique to the request
//	key             the key the request is limited on (a string)
//
// The now_* variables are the clock; see Template.UsesClock.
var Placeholders = []string{"now_us", "now_ms", "now_s", "window_us", "window_ms", "window_s", "limit", "cost", "request_id", "key"}

// clockPlaceholders are the Placeholders that read the clock.
var clockPlaceholders = []string{"now_us", "now_ms", "now_s"}

// Template is one parsed template: literal text, placeholders and
// expressions, filled per request from Values. It is used for script
// arguments (ARGV) and keys.
//
// A Template is immutable once parsed and safe for concurrent use: its
// expressions are compiled once by ParseTemplate, and a compiled expr program
// is safe to run from many goroutines at once (expr's documentation:
// "Compiled programs are safe for concurrent use"; each run has its own VM).
// The zero Template is empty and fills as "".
type Template struct {
	src   string
	parts []part
}

// part is one piece of a Template: exactly one of lit, name and prog is set.
type part struct {
	lit  string
	name string      // a lone placeholder, written directly (appendPlaceholder), not evaluated
	prog *vm.Program // an expression
	src  string      // the expression's text, without the braces
	uses []string    // the Placeholders the expression names
}

// Values fill a Template. Fields a template does not name are ignored.
type Values struct {
	// Now is the request's time ({now_us}, {now_ms}, {now_s}).
	Now time.Time
	// Window is the limit's window ({window_us}, {window_ms}, {window_s}).
	Window time.Duration
	// Limit is the number of requests allowed per Window ({limit}).
	Limit int64
	// Cost is the request's cost ({cost}).
	Cost int64
	// RequestID is a string unique to the request ({request_id}).
	RequestID string
	// Key is the key the request is limited on ({key}); for a script, its
	// KEYS[1].
	Key string
}

// ParseTemplate parses a template: literal text in which braces hold a
// placeholder or an expression that is replaced when the template is filled.
//
// A brace followed by a lower-case letter or "_" opens a substitution, which
// runs to the matching "}":
//
//   - "{name}", a lone placeholder (see Placeholders), is replaced by its
//     value exactly as it always was: integers in decimal, {now_s} and
//     {window_s} as decimal seconds without trailing zeros ("0.5", "10",
//     "1732240000.123456"), strings as they are.
//   - Anything else is an expression in the expr language
//     (https://expr-lang.org): "{floor(now_ms / window_ms)}",
//     "{limit / window_s}", "{key}:{floor(now_ms / window_ms) - 1}". The
//     placeholders are its variables; the operators are + - * / % and **,
//     with the builtins floor, ceil, round, abs, min, max, string, int,
//     upper, lower, and the rest of expr's library, except now() (the clock
//     comes only from now_*). Strings join with +: {key + ":" + request_id}.
//     Arrays index from 1, as in Lua: {split(key, ":")[2]} is "42" for the
//     key "user:42" (see ParseReplyPredicate for the rules).
//
// Numbers in expressions: now_us, now_ms, window_us, window_ms, limit and
// cost are int64, and + - * % on integers stay exact integers (overflow past
// ±9.2e18 wraps, as in Go; now_us * 1000 is still exact); % takes integers
// only. now_s and window_s are float64 seconds, and an integer meeting a
// float becomes a float. "/" and "**" always give a float, as in Lua:
// {limit / window_s} is 10 for limit 10 and window 1s, 5 for window 2s,
// 6.666666666666667 for 20 / 3. floor, ceil and round return whole floats.
// floor(a / b) of integers below 2^53 (now_us until the year 2255) is the
// exact integer quotient.
//
// Rendering an expression's value: an integer in decimal; a float with the
// fewest digits that read back as the same float64, never with an exponent,
// and without a decimal point when whole (5.0 gives "5", 1e20 gives
// "100000000000000000000"); a string as it is. An expression whose type is
// a bool, array, map or time is a parse error; a result that is NaN or
// infinite (a division by zero) is a fill error.
//
// Other braces are literal text: JSON such as `{"a":1}`, "{ x }", "[[10, 5]]"
// and "{1}" come back as written. There is no escape: a literal "{" followed
// by a lower-case letter can be written as an expression,
// {string("{abc}")}.
//
// Errors name the template and the character (counted from 1) where the
// problem is: an unknown placeholder ("{nwo_us}"), an unknown variable in an
// expression, a syntax error, an unclosed brace, or an expression that cannot
// give a number or a string.
//
// Compatibility: before expressions, braced text that was not exactly a
// lower-case name was literal. It still is unless it starts with a lower-case
// letter or "_": "{now_us }" now fills, and "{a b}" or "{now_us2}" is now an
// error.
func ParseTemplate(s string) (Template, error) {
	t := Template{src: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		if s[i] != '{' || i+1 == len(s) || !isPlaceholderStart(s[i+1]) {
			lit.WriteByte(s[i])
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isPlaceholderStart(s[j]) {
			j++
		}
		if j < len(s) && s[j] == '}' {
			name := s[i+1 : j]
			if !isPlaceholder(name) {
				return Template{}, templateError(s, i, fmt.Sprintf("unknown placeholder {%s} (known: {%s})", name, strings.Join(Placeholders, "} {")))
			}
			flush()
			t.parts = append(t.parts, part{name: name})
			i = j + 1
			continue
		}
		end, err := closingBrace(s, i)
		if err != nil {
			return Template{}, templateError(s, i, err.Error())
		}
		p, err := compileTemplateExpr(s, i+1, end)
		if err != nil {
			return Template{}, err
		}
		flush()
		t.parts = append(t.parts, p)
		i = end + 1
	}
	flush()
	return t, nil
}

// isPlaceholderStart reports whether c may start a substitution: [a-z_]. A lone
// placeholder is made of these bytes only.
func isPlaceholderStart(c byte) bool { return c >= 'a' && c <= 'z' || c == '_' }

func isPlaceholder(name string) bool {
	for _, p := range Placeholders {
		if p == name {
			return true
		}
	}
	return false
}

// closingBrace returns the index of the "}" that closes the "{" at s[open],
// skipping nested braces and string literals ("...", '...', `...`).
func closingBrace(s string, open int) (int, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch c := s[i]; c {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i, nil
			}
		case '"', '\'', '`':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(s) {
				return 0, errors.New("unterminated string in expression")
			}
			i = j
		}
	}
	return 0, errors.New("no closing } for this expression")
}

// templateError is a parse error at byte offset at of template s.
func templateError(s string, at int, msg string) error { return sourceError("template", s, at, msg) }

// sourceError is a parse error at byte offset at of s, a what ("template").
func sourceError(what, s string, at int, msg string) error {
	return fmt.Errorf("%s %q, character %d: %s", what, s, utf8.RuneCountInString(s[:at])+1, msg)
}

// templateEnv is the variables of a template expression. Its fields and
// tags are Placeholders (TestTemplateEnvMatchesPlaceholders checks).
type templateEnv struct {
	NowUS     int64   `expr:"now_us"`
	NowMS     int64   `expr:"now_ms"`
	NowS      float64 `expr:"now_s"`
	WindowUS  int64   `expr:"window_us"`
	WindowMS  int64   `expr:"window_ms"`
	WindowS   float64 `expr:"window_s"`
	Limit     int64   `expr:"limit"`
	Cost      int64   `expr:"cost"`
	RequestID string  `expr:"request_id"`
	Key       string  `expr:"key"`
}

func newTemplateEnv(v Values) templateEnv {
	nowUS, winUS := v.Now.UnixMicro(), v.Window.Microseconds()
	return templateEnv{
		NowUS: nowUS, NowMS: v.Now.UnixMilli(), NowS: float64(nowUS) / 1e6,
		WindowUS: winUS, WindowMS: v.Window.Milliseconds(), WindowS: float64(winUS) / 1e6,
		Limit: v.Limit, Cost: v.Cost, RequestID: v.RequestID, Key: v.Key,
	}
}

// compileExpr compiles an expression of a template or a predicate over the
// variables of env, and returns the Placeholders it names. Expressions in
// both have no now() (the clock comes only from now_*, so that it can be
// injected) and index arrays from 1 (see indexRewriter).
func compileExpr(src string, env any) (*vm.Program, []string, error) {
	_, pred := env.(predicateEnv)
	rw := &indexRewriter{compare: pred}
	prog, err := expr.Compile(src,
		expr.Env(env),
		expr.DisableBuiltin("now"),
		expr.Function(luaIndexFn, luaIndex),
		expr.Function(luaOptionalIndexFn, luaOptionalIndex),
		expr.Function(luaCompareFns["=="], luaCompare(runtime.Equal)),
		expr.Function(luaCompareFns["!="], luaCompare(func(a, b any) bool { return !runtime.Equal(a, b) })),
		expr.Function(luaCompareFns["<"], luaCompare(runtime.Less)),
		expr.Function(luaCompareFns["<="], luaCompare(runtime.LessOrEqual)),
		expr.Function(luaCompareFns[">"], luaCompare(runtime.More)),
		expr.Function(luaCompareFns[">="], luaCompare(runtime.MoreOrEqual)),
		expr.Patch(rw))
	if err == nil && rw.err != nil {
		err = rw.err
	}
	if err != nil {
		return nil, nil, err
	}
	return prog, rw.names.names, nil
}

// compileTemplateExpr compiles the expression s[open+1:end] of template s.
func compileTemplateExpr(s string, open, end int) (part, error) {
	src := s[open:end]
	prog, uses, err := compileExpr(src, templateEnv{})
	if err != nil {
		return part{}, exprError("template", s, open, err, Placeholders)
	}
	if typ := prog.Node().Type(); !renderable(typ) {
		return part{}, templateError(s, open, fmt.Sprintf("{%s} gives %s; want a number or a string", src, describeType(typ)))
	}
	// an expression that fails on two unlike sets of values (a constant
	// "% 0") fails on every call: said now, as the template's error
	samples := []Values{
		{Now: time.Date(2026, 1, 1, 0, 0, 0, 123456000, time.UTC), Window: time.Second, Limit: 10, Cost: 1, RequestID: "1", Key: "user:1"},
		{Now: time.Date(2031, 7, 9, 13, 5, 7, 654321000, time.UTC), Window: 90 * time.Minute, Limit: 977, Cost: 3, RequestID: "7f3a", Key: "k:2:x"},
	}
	var first error
	for _, v := range samples {
		_, err := runProgram(prog, newTemplateEnv(v))
		if err == nil {
			return part{prog: prog, src: src, uses: uses}, nil
		}
		if first == nil {
			first = err
		}
	}
	return part{}, templateError(s, open, fmt.Sprintf("{%s} fails whatever the values: %s", src, exprMessage(first)))
}

// exprError turns an expr compile error for the expression starting at byte
// offset start of s, a what ("template"), into a sourceError at the
// character it points to. An unknown name is shown with the known ones.
func exprError(what, s string, start int, err error, known []string) error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return sourceError(what, s, start, err.Error())
	}
	msg := fe.Message
	if strings.HasPrefix(msg, "unknown name ") {
		msg += " (known: " + strings.Join(known, ", ") + ")"
	}
	at := start
	for n := 0; n < fe.From && at < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[at:])
		at += size
	}
	return sourceError(what, s, at, msg)
}

// renderable reports whether a value of type typ can fill a template. An
// interface type is decided when the value is known.
func renderable(typ reflect.Type) bool {
	if typ == nil {
		return false
	}
	switch typ.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String, reflect.Interface:
		return true
	}
	return false
}

func describeType(typ reflect.Type) string {
	if typ == nil {
		return "nil"
	}
	switch typ.Kind() {
	case reflect.Bool:
		return "a bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a float"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map:
		return "a map"
	}
	return "a " + typ.String()
}

// nameCollector is an expr patcher that records the Placeholders an
// expression names. It patches nothing.
type nameCollector struct{ names []string }

func (c *nameCollector) Visit(node *ast.Node) {
	id, ok := (*node).(*ast.IdentifierNode)
	if !ok || !isPlaceholder(id.Value) {
		return
	}
	for _, n := range c.names {
		if n == id.Value {
			return
		}
	}
	c.names = append(c.names, id.Value)
}

// Uses reports whether the template names any of the placeholders, alone or
// in an expression.
func (t Template) Uses(names ...string) bool {
	for _, p := range t.parts {
		for _, n := range names {
			if p.name == n {
				return true
			}
			for _, u := range p.uses {
				if u == n {
					return true
				}
			}
		}
	}
	return false
}

// UsesClock reports whether the template reads the clock (now_us, now_ms or
// now_s): then what it fills changes with time, so a key built from it moves
// as time passes, and reproducing a run needs an injected clock.
func (t Template) UsesClock() bool { return t.Uses(clockPlaceholders...) }

// String returns the template as written.
func (t Template) String() string { return t.src }

// Fill returns the template filled from v. A template whose only
// substitutions are lone placeholders never fails. An expression can fail
// (a division by zero, "x" % 0): where Render returns an error, Fill
// returns "". Use Render when an expression may fail.
func (t Template) Fill(v Values) string {
	s, err := t.Render(v)
	if err != nil {
		return ""
	}
	return s
}

// Render returns the template filled from v, or an error that names the
// template and the expression that failed.
func (t Template) Render(v Values) (string, error) {
	var b strings.Builder
	var env *templateEnv
	for _, p := range t.parts {
		switch {
		case p.prog != nil:
			if env == nil {
				e := newTemplateEnv(v)
				env = &e
			}
			out, err := runProgram(p.prog, env)
			if err == nil {
				err = appendValue(&b, out)
			}
			if err != nil {
				return "", fmt.Errorf("template %q: {%s}: %s", t.src, p.src, exprMessage(err))
			}
		case p.name != "":
			appendPlaceholder(&b, p.name, v)
		default:
			b.WriteString(p.lit)
		}
	}
	return b.String(), nil
}

// appendPlaceholder writes the value of a lone placeholder.
func appendPlaceholder(b *strings.Builder, name string, v Values) {
	switch name {
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
	case "key":
		b.WriteString(v.Key)
	}
}

// appendValue writes an expression's value: see ParseTemplate.
func appendValue(b *strings.Builder, x any) error {
	var buf [32]byte
	switch x := x.(type) {
	case string:
		b.WriteString(x)
	case int:
		b.Write(strconv.AppendInt(buf[:0], int64(x), 10))
	case int64:
		b.Write(strconv.AppendInt(buf[:0], x, 10))
	case int32:
		b.Write(strconv.AppendInt(buf[:0], int64(x), 10))
	case int16:
		b.Write(strconv.AppendInt(buf[:0], int64(x), 10))
	case int8:
		b.Write(strconv.AppendInt(buf[:0], int64(x), 10))
	case uint:
		b.Write(strconv.AppendUint(buf[:0], uint64(x), 10))
	case uint64:
		b.Write(strconv.AppendUint(buf[:0], x, 10))
	case uint32:
		b.Write(strconv.AppendUint(buf[:0], uint64(x), 10))
	case uint16:
		b.Write(strconv.AppendUint(buf[:0], uint64(x), 10))
	case uint8:
		b.Write(strconv.AppendUint(buf[:0], uint64(x), 10))
	case float32:
		return appendValue(b, float64(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("result is %v (a division by zero?); want a finite number", x)
		}
		if x == 0 {
			x = 0 // not "-0"
		}
		b.Write(strconv.AppendFloat(buf[:0], x, 'f', -1, 64))
	case nil:
		return errors.New("result is nil; want a number or a string")
	default:
		return fmt.Errorf("result %v is a %T; want a number or a string", x, x)
	}
	return nil
}

// vms recycles expr VMs, whose stacks would otherwise be allocated per run.
// A VM is used by one goroutine at a time; the programs they run are shared.
var vms = sync.Pool{New: func() any { return new(vm.VM) }}

func runProgram(p *vm.Program, env any) (any, error) {
	m := vms.Get().(*vm.VM)
	out, err := m.Run(p, env)
	vms.Put(m)
	return out, err
}

// exprMessage is the message of an expr error without its source snippet.
func exprMessage(err error) string {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	// Go's own run-time panics, recovered by expr, in the template's words
	msg = strings.TrimPrefix(msg, "runtime error: ")
	if msg == "integer divide by zero" {
		msg = "division by zero (an integer / or % by 0)"
	}
	return msg
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
