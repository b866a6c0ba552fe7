package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file is the expression language scenario files had before expr: the
// hand-written parser and evaluator of scenarios/expr.go at commit 3860d7d,
// with its identifiers prefixed by legacy and otherwise unchanged. It is kept
// only as the reference that FuzzExprLegacy compares the expr version with.
// The grammar:
//
//	expr  = cmp
//	cmp   = sum [("<" | "<=" | ">" | ">=" | "==" | "!=") sum]
//	sum   = prod {("+" | "-") prod}
//	prod  = unary {("*" | "/" | "%") unary}
//	unary = "-" unary | atom
//	atom  = number | duration | name | name "(" expr {"," expr} ")" | "(" expr ")"

// kind is the dimension of a value: a plain number or a duration.
type legacyKind int

const (
	legacyNumber legacyKind = iota
	legacyDuration
)

func (k legacyKind) String() string {
	if k == legacyDuration {
		return "duration"
	}
	return "number"
}

// value is a number, or a duration in nanoseconds.
type legacyValue struct {
	n int64
	k legacyKind
}

func (v legacyValue) String() string {
	if v.k == legacyDuration {
		return time.Duration(v.n).String()
	}
	return strconv.FormatInt(v.n, 10)
}

// node is a parsed expression.
type legacyNode interface {
	eval(env map[string]legacyValue) (legacyValue, error)
}

type legacyLit struct{ v legacyValue }

type legacyName struct{ name string }

type legacyNeg struct{ x legacyNode }

type legacyBin struct {
	op   string
	l, r legacyNode
}

type legacyCall struct {
	fn   string
	args []legacyNode
}

func (n legacyLit) eval(map[string]legacyValue) (legacyValue, error) { return n.v, nil }

func (n legacyName) eval(env map[string]legacyValue) (legacyValue, error) {
	v, ok := env[n.name]
	if !ok {
		return legacyValue{}, fmt.Errorf("unknown name %q", n.name)
	}
	return v, nil
}

func (n legacyNeg) eval(env map[string]legacyValue) (legacyValue, error) {
	x, err := n.x.eval(env)
	if err != nil {
		return legacyValue{}, err
	}
	return legacyValue{-x.n, x.k}, nil
}

func (n legacyBin) eval(env map[string]legacyValue) (legacyValue, error) {
	l, err := n.l.eval(env)
	if err != nil {
		return legacyValue{}, err
	}
	r, err := n.r.eval(env)
	if err != nil {
		return legacyValue{}, err
	}
	mismatch := func() (legacyValue, error) {
		return legacyValue{}, fmt.Errorf("%s %s %s: cannot combine a %s and a %s", l, n.op, r, l.k, r.k)
	}
	switch n.op {
	case "+", "-":
		if l.k != r.k {
			return mismatch()
		}
		if n.op == "+" {
			return legacyValue{l.n + r.n, l.k}, nil
		}
		return legacyValue{l.n - r.n, l.k}, nil
	case "*":
		if l.k == legacyDuration && r.k == legacyDuration {
			return mismatch()
		}
		k := legacyNumber
		if l.k == legacyDuration || r.k == legacyDuration {
			k = legacyDuration
		}
		return legacyValue{l.n * r.n, k}, nil
	case "/", "%":
		if l.k == legacyNumber && r.k == legacyDuration {
			return mismatch()
		}
		if r.n == 0 {
			return legacyValue{}, fmt.Errorf("%s %s %s: division by zero", l, n.op, r)
		}
		if n.op == "%" {
			if l.k != r.k {
				return mismatch()
			}
			return legacyValue{l.n % r.n, l.k}, nil
		}
		k := l.k
		if l.k == legacyDuration && r.k == legacyDuration {
			k = legacyNumber
		}
		return legacyValue{l.n / r.n, k}, nil
	default: // comparisons
		if l.k != r.k {
			return mismatch()
		}
		var b bool
		switch n.op {
		case "<":
			b = l.n < r.n
		case "<=":
			b = l.n <= r.n
		case ">":
			b = l.n > r.n
		case ">=":
			b = l.n >= r.n
		case "==":
			b = l.n == r.n
		case "!=":
			b = l.n != r.n
		}
		if b {
			return legacyValue{1, legacyNumber}, nil
		}
		return legacyValue{0, legacyNumber}, nil
	}
}

func (n legacyCall) eval(env map[string]legacyValue) (legacyValue, error) {
	switch n.fn {
	case "if":
		if len(n.args) != 3 {
			return legacyValue{}, fmt.Errorf("if takes 3 arguments (condition, then, else), got %d", len(n.args))
		}
		c, err := n.args[0].eval(env)
		if err != nil {
			return legacyValue{}, err
		}
		if c.k != legacyNumber {
			return legacyValue{}, fmt.Errorf("if: the condition must be a number, got the duration %s", c)
		}
		// Only the chosen branch is evaluated, so the other may divide by zero.
		if c.n != 0 {
			return n.args[1].eval(env)
		}
		return n.args[2].eval(env)
	case "min", "max":
		if len(n.args) < 1 {
			return legacyValue{}, fmt.Errorf("%s needs at least 1 argument", n.fn)
		}
		var best legacyValue
		for i, a := range n.args {
			v, err := a.eval(env)
			if err != nil {
				return legacyValue{}, err
			}
			if i > 0 && v.k != best.k {
				return legacyValue{}, fmt.Errorf("%s: cannot compare a %s and a %s", n.fn, best.k, v.k)
			}
			if i == 0 || (n.fn == "min" && v.n < best.n) || (n.fn == "max" && v.n > best.n) {
				best = v
			}
		}
		return best, nil
	}
	return legacyValue{}, fmt.Errorf("unknown function %q (known: min, max, if)", n.fn)
}

// exprParser is a recursive-descent parser over one expression string.
type legacyParser struct {
	s     string
	pos   int
	depth int
}

// maxDepth bounds the nesting of parentheses, minus signs and calls, so that
// a hostile expression cannot exhaust the stack.
const legacyMaxDepth = 64

// parseExpr parses an expression; it does not evaluate it, so unknown names
// are reported by eval.
func legacyParseExpr(s string) (legacyNode, error) {
	p := &legacyParser{s: s}
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty expression")
	}
	n, err := p.cmp()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, fmt.Errorf("unexpected %q at column %d", p.s[p.pos:], p.pos+1)
	}
	return n, nil
}

func (p *legacyParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// accept consumes op if it comes next.
func (p *legacyParser) accept(op string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], op) {
		p.pos += len(op)
		return true
	}
	return false
}

func (p *legacyParser) cmp() (legacyNode, error) {
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	for _, op := range []string{"<=", ">=", "==", "!=", "<", ">"} {
		if p.accept(op) {
			r, err := p.sum()
			if err != nil {
				return nil, err
			}
			return legacyBin{op, l, r}, nil
		}
	}
	return l, nil
}

func (p *legacyParser) sum() (legacyNode, error) {
	l, err := p.prod()
	if err != nil {
		return nil, err
	}
	for {
		var op string
		switch {
		case p.accept("+"):
			op = "+"
		case p.accept("-"):
			op = "-"
		default:
			return l, nil
		}
		r, err := p.prod()
		if err != nil {
			return nil, err
		}
		l = legacyBin{op, l, r}
	}
}

func (p *legacyParser) prod() (legacyNode, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		var op string
		switch {
		case p.accept("*"):
			op = "*"
		case p.accept("/"):
			op = "/"
		case p.accept("%"):
			op = "%"
		default:
			return l, nil
		}
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = legacyBin{op, l, r}
	}
}

func (p *legacyParser) unary() (legacyNode, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > legacyMaxDepth {
		return nil, fmt.Errorf("expression nested deeper than %d", legacyMaxDepth)
	}
	if p.accept("-") {
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return legacyNeg{x}, nil
	}
	return p.atom()
}

func legacyIsDigit(c byte) bool { return c >= '0' && c <= '9' }

func legacyIsNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || legacyIsDigit(c)
}

func (p *legacyParser) atom() (legacyNode, error) {
	p.space()
	if p.pos >= len(p.s) {
		return nil, errors.New("unexpected end of expression")
	}
	start := p.pos
	c := p.s[p.pos]
	switch {
	case c == '(':
		p.pos++
		n, err := p.cmp()
		if err != nil {
			return nil, err
		}
		if !p.accept(")") {
			return nil, fmt.Errorf("missing ) for ( at column %d", start+1)
		}
		return n, nil
	case legacyIsDigit(c):
		// a number, or a duration: digits, '.', and unit letters (ns, us, µs, ms, s, m, h)
		for p.pos < len(p.s) && (legacyIsNameByte(p.s[p.pos]) || p.s[p.pos] == '.' || p.s[p.pos] >= 0x80) {
			p.pos++
		}
		lit := p.s[start:p.pos]
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return legacyLit{legacyValue{n, legacyNumber}}, nil
		}
		d, err := time.ParseDuration(lit)
		if err != nil {
			return nil, fmt.Errorf("bad number or duration %q at column %d", lit, start+1)
		}
		return legacyLit{legacyValue{int64(d), legacyDuration}}, nil
	case legacyIsNameByte(c):
		for p.pos < len(p.s) && legacyIsNameByte(p.s[p.pos]) {
			p.pos++
		}
		name := p.s[start:p.pos]
		if !p.accept("(") {
			return legacyName{name}, nil
		}
		var args []legacyNode
		if !p.accept(")") {
			for {
				a, err := p.cmp()
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				if p.accept(")") {
					break
				}
				if !p.accept(",") {
					return nil, fmt.Errorf("missing , or ) in the arguments of %s", name)
				}
			}
		}
		return legacyCall{name, args}, nil
	}
	return nil, fmt.Errorf("unexpected %q at column %d", string(c), start+1)
}
