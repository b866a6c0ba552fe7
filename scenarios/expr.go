package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file is the small expression language of scenario files: integer
// arithmetic with Go's int64 semantics (truncating division), two kinds of
// value (a plain number and a duration in nanoseconds) checked on every
// operation, durations written as Go durations ("1ms", "1.5s", "10µs" or
// "10us"), and the functions min, max and if. The grammar:
//
//	expr  = cmp
//	cmp   = sum [("<" | "<=" | ">" | ">=" | "==" | "!=") sum]
//	sum   = prod {("+" | "-") prod}
//	prod  = unary {("*" | "/" | "%") unary}
//	unary = "-" unary | atom
//	atom  = number | duration | name | name "(" expr {"," expr} ")" | "(" expr ")"

// kind is the dimension of a value: a plain number or a duration.
type kind int

const (
	number kind = iota
	duration
)

func (k kind) String() string {
	if k == duration {
		return "duration"
	}
	return "number"
}

// value is a number, or a duration in nanoseconds.
type value struct {
	n int64
	k kind
}

func (v value) String() string {
	if v.k == duration {
		return time.Duration(v.n).String()
	}
	return strconv.FormatInt(v.n, 10)
}

// node is a parsed expression.
type node interface {
	eval(env map[string]value) (value, error)
}

type litNode struct{ v value }

type nameNode struct{ name string }

type negNode struct{ x node }

type binNode struct {
	op   string
	l, r node
}

type callNode struct {
	fn   string
	args []node
}

func (n litNode) eval(map[string]value) (value, error) { return n.v, nil }

func (n nameNode) eval(env map[string]value) (value, error) {
	v, ok := env[n.name]
	if !ok {
		return value{}, fmt.Errorf("unknown name %q", n.name)
	}
	return v, nil
}

func (n negNode) eval(env map[string]value) (value, error) {
	x, err := n.x.eval(env)
	if err != nil {
		return value{}, err
	}
	return value{-x.n, x.k}, nil
}

func (n binNode) eval(env map[string]value) (value, error) {
	l, err := n.l.eval(env)
	if err != nil {
		return value{}, err
	}
	r, err := n.r.eval(env)
	if err != nil {
		return value{}, err
	}
	mismatch := func() (value, error) {
		return value{}, fmt.Errorf("%s %s %s: cannot combine a %s and a %s", l, n.op, r, l.k, r.k)
	}
	switch n.op {
	case "+", "-":
		if l.k != r.k {
			return mismatch()
		}
		if n.op == "+" {
			return value{l.n + r.n, l.k}, nil
		}
		return value{l.n - r.n, l.k}, nil
	case "*":
		if l.k == duration && r.k == duration {
			return mismatch()
		}
		k := number
		if l.k == duration || r.k == duration {
			k = duration
		}
		return value{l.n * r.n, k}, nil
	case "/", "%":
		if l.k == number && r.k == duration {
			return mismatch()
		}
		if r.n == 0 {
			return value{}, fmt.Errorf("%s %s %s: division by zero", l, n.op, r)
		}
		if n.op == "%" {
			if l.k != r.k {
				return mismatch()
			}
			return value{l.n % r.n, l.k}, nil
		}
		k := l.k
		if l.k == duration && r.k == duration {
			k = number
		}
		return value{l.n / r.n, k}, nil
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
			return value{1, number}, nil
		}
		return value{0, number}, nil
	}
}

func (n callNode) eval(env map[string]value) (value, error) {
	switch n.fn {
	case "if":
		if len(n.args) != 3 {
			return value{}, fmt.Errorf("if takes 3 arguments (condition, then, else), got %d", len(n.args))
		}
		c, err := n.args[0].eval(env)
		if err != nil {
			return value{}, err
		}
		if c.k != number {
			return value{}, fmt.Errorf("if: the condition must be a number, got the duration %s", c)
		}
		// Only the chosen branch is evaluated, so the other may divide by zero.
		if c.n != 0 {
			return n.args[1].eval(env)
		}
		return n.args[2].eval(env)
	case "min", "max":
		if len(n.args) < 1 {
			return value{}, fmt.Errorf("%s needs at least 1 argument", n.fn)
		}
		var best value
		for i, a := range n.args {
			v, err := a.eval(env)
			if err != nil {
				return value{}, err
			}
			if i > 0 && v.k != best.k {
				return value{}, fmt.Errorf("%s: cannot compare a %s and a %s", n.fn, best.k, v.k)
			}
			if i == 0 || (n.fn == "min" && v.n < best.n) || (n.fn == "max" && v.n > best.n) {
				best = v
			}
		}
		return best, nil
	}
	return value{}, fmt.Errorf("unknown function %q (known: min, max, if)", n.fn)
}

// exprParser is a recursive-descent parser over one expression string.
type exprParser struct {
	s     string
	pos   int
	depth int
}

// maxDepth bounds the nesting of parentheses, minus signs and calls, so that
// a hostile expression cannot exhaust the stack.
const maxDepth = 64

// parseExpr parses an expression; it does not evaluate it, so unknown names
// are reported by eval.
func parseExpr(s string) (node, error) {
	p := &exprParser{s: s}
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

func (p *exprParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// accept consumes op if it comes next.
func (p *exprParser) accept(op string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], op) {
		p.pos += len(op)
		return true
	}
	return false
}

func (p *exprParser) cmp() (node, error) {
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
			return binNode{op, l, r}, nil
		}
	}
	return l, nil
}

func (p *exprParser) sum() (node, error) {
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
		l = binNode{op, l, r}
	}
}

func (p *exprParser) prod() (node, error) {
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
		l = binNode{op, l, r}
	}
}

func (p *exprParser) unary() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, fmt.Errorf("expression nested deeper than %d", maxDepth)
	}
	if p.accept("-") {
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return negNode{x}, nil
	}
	return p.atom()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c)
}

func (p *exprParser) atom() (node, error) {
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
	case isDigit(c):
		// a number, or a duration: digits, '.', and unit letters (ns, us, µs, ms, s, m, h)
		for p.pos < len(p.s) && (isNameByte(p.s[p.pos]) || p.s[p.pos] == '.' || p.s[p.pos] >= 0x80) {
			p.pos++
		}
		lit := p.s[start:p.pos]
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return litNode{value{n, number}}, nil
		}
		d, err := time.ParseDuration(lit)
		if err != nil {
			return nil, fmt.Errorf("bad number or duration %q at column %d", lit, start+1)
		}
		return litNode{value{int64(d), duration}}, nil
	case isNameByte(c):
		for p.pos < len(p.s) && isNameByte(p.s[p.pos]) {
			p.pos++
		}
		name := p.s[start:p.pos]
		if !p.accept("(") {
			return nameNode{name}, nil
		}
		var args []node
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
		return callNode{name, args}, nil
	}
	return nil, fmt.Errorf("unexpected %q at column %d", string(c), start+1)
}
