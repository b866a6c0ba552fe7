package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// This file is the expression language of scenario files: expr
// (https://expr-lang.org), compiled once per field, with the rules scenario
// files had before expr (ParseScenario documents them for users):
//
//   - Two kinds of value, a number (int64) and a duration (time.Duration),
//     checked on every operation. + - % and comparisons take one kind; a
//     duration times a number is a duration; a duration divided by a number
//     is a duration, by a duration a number. A comparison gives a bool,
//     which counts as the number 1 or 0.
//   - Integer arithmetic with Go's int64 semantics: / truncates, overflow
//     wraps, a division by zero is an error.
//   - Durations are written as Go durations: 1ms, 1.5s, 10us, 10µs.
//   - The functions are min(a, ...), max(a, ...) and if(cond, then, else),
//     which evaluates only the chosen branch; a condition is a bool or a
//     number, non-zero being true.
//
// expr's parser, type checker and VM do the rest: the patcher
// (exprPatcher) rewrites the operators of the old grammar into calls of the
// functions below, makes the conditions of if, ?:, &&, || and ! accept a
// number as the old if did, and refuses the rest of expr (fractions,
// strings, arrays, member access, builtins).

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

// typed returns v as expr sees it: an int64 or a time.Duration.
func (v value) typed() any {
	if v.k == duration {
		return time.Duration(v.n)
	}
	return v.n
}

// toValue reads a value computed by expr: an integer is a number, a
// time.Duration a duration, a bool the number 1 or 0. The patcher lets no
// other value into an expression; one would be an error.
func toValue(x any) (value, error) {
	switch x := x.(type) {
	case int:
		return value{int64(x), number}, nil
	case int64:
		return value{x, number}, nil
	case time.Duration:
		return value{int64(x), duration}, nil
	case bool:
		if x {
			return value{1, number}, nil
		}
		return value{0, number}, nil
	}
	return value{}, fmt.Errorf("%v (a %T) is not a number or a duration", x, x)
}

// binary applies one operator of the old grammar: + - * / % < <= > >= == !=.
// Arithmetic gives a typed value, a comparison a bool.
func binary(op string, l, r value) (any, error) {
	mismatch := func() (any, error) {
		return nil, fmt.Errorf("%s %s %s: cannot combine a %s and a %s", l, op, r, l.k, r.k)
	}
	switch op {
	case "+", "-":
		if l.k != r.k {
			return mismatch()
		}
		if op == "+" {
			return value{l.n + r.n, l.k}.typed(), nil
		}
		return value{l.n - r.n, l.k}.typed(), nil
	case "*":
		if l.k == duration && r.k == duration {
			return mismatch()
		}
		k := number
		if l.k == duration || r.k == duration {
			k = duration
		}
		return value{l.n * r.n, k}.typed(), nil
	case "/", "%":
		if l.k == number && r.k == duration {
			return mismatch()
		}
		if r.n == 0 {
			return nil, fmt.Errorf("%s %s %s: division by zero", l, op, r)
		}
		if op == "%" {
			if l.k != r.k {
				return mismatch()
			}
			return value{l.n % r.n, l.k}.typed(), nil
		}
		k := l.k
		if l.k == duration && r.k == duration {
			k = number
		}
		return value{l.n / r.n, k}.typed(), nil
	}
	if l.k != r.k {
		return mismatch()
	}
	switch op {
	case "<":
		return l.n < r.n, nil
	case "<=":
		return l.n <= r.n, nil
	case ">":
		return l.n > r.n, nil
	case ">=":
		return l.n >= r.n, nil
	case "==":
		return l.n == r.n, nil
	}
	return l.n != r.n, nil
}

// Names of the functions the patcher calls. They contain a space, so no
// expression can name them.
const (
	fnPrefix = "scenario "
	fnNeg    = "scenario neg"
	fnCond   = "scenario cond " // + if, &&, ||, ! or ?:
)

// binaryOps are the operators the patcher rewrites to fnPrefix+op.
var binaryOps = []string{"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!="}

// exprOptions are the options every scenario expression compiles with,
// besides its Env and its patcher.
var exprOptions = func() []expr.Option {
	opts := []expr.Option{
		expr.DisableAllBuiltins(),
		expr.DisableIfOperator(), // if(c, a, b) is a call
		expr.Function(fnNeg, func(args ...any) (any, error) {
			x, err := toValue(args[0])
			if err != nil {
				return nil, fmt.Errorf("-: %w", err)
			}
			return value{-x.n, x.k}.typed(), nil
		}, new(func(any) any)),
		expr.Function(fnPrefix+"min", func(args ...any) (any, error) { return minMax("min", args) }),
		expr.Function(fnPrefix+"max", func(args ...any) (any, error) { return minMax("max", args) }),
	}
	// A condition (of if, &&, ||, !, ?:) is a bool, or a number: non-zero is
	// true. Its function's declared type is any, not bool: expr's checker
	// skips the arguments of a call whose type it already knows.
	for _, op := range []string{"if", "&&", "||", "!", "?:"} {
		opts = append(opts, expr.Function(fnCond+op, func(args ...any) (any, error) {
			c, err := toValue(args[0])
			switch {
			case err != nil:
				return nil, fmt.Errorf("%s: %w", op, err)
			case c.k != number && op == "if":
				return nil, fmt.Errorf("if: the condition must be a number, got the duration %s", c)
			case c.k != number:
				return nil, fmt.Errorf("%s: want a bool or a number, got the duration %s", op, c)
			}
			return c.n != 0, nil
		}, new(func(any) any)))
	}
	for _, op := range binaryOps {
		opts = append(opts, expr.Function(fnPrefix+op, func(args ...any) (any, error) {
			l, err := toValue(args[0])
			if err == nil {
				var r value
				if r, err = toValue(args[1]); err == nil {
					return binary(op, l, r)
				}
			}
			return nil, fmt.Errorf("%s: %w", op, err)
		}, new(func(any, any) any)))
	}
	return opts
}()

// minMax is min or max of one value, or of two values of one kind: the
// patcher folds min(a, b, c) into min(min(a, b), c), so that the arguments
// are evaluated and checked in order.
func minMax(fn string, args []any) (any, error) {
	best, err := toValue(args[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	if len(args) == 1 {
		return best.typed(), nil
	}
	v, err := toValue(args[1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	if v.k != best.k {
		return nil, fmt.Errorf("%s: cannot compare a %s and a %s", fn, best.k, v.k)
	}
	if (fn == "min" && v.n < best.n) || (fn == "max" && v.n > best.n) {
		best = v
	}
	return best.typed(), nil
}

// exprPatcher rewrites the old grammar's operators and functions into calls
// of the functions above, turns the duration literals prepareExpr named $0,
// $1, ... into constants, and refuses what is not part of the language (err
// is set): the whitelist below. expr walks the tree once, children first,
// so the nodes it makes are not visited again.
type exprPatcher struct {
	durations []time.Duration
	err       error
	errAt     ast.Node // the node err is about
}

func (p *exprPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IntegerNode, *ast.BoolNode, *ast.VariableDeclaratorNode, *ast.SequenceNode:
	case *ast.ConditionalNode: // c ? a : b
		n.Cond = call(fnCond+"?:", n.Cond)
	case *ast.IdentifierNode:
		if rest, ok := strings.CutPrefix(n.Value, "$"); ok {
			if k, err := strconv.Atoi(rest); err == nil && k >= 0 && k < len(p.durations) {
				ast.Patch(node, &ast.ConstantNode{Value: p.durations[k]})
			}
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "&&", "and":
			n.Left, n.Right = call(fnCond+"&&", n.Left), call(fnCond+"&&", n.Right)
		case "||", "or":
			n.Left, n.Right = call(fnCond+"||", n.Left), call(fnCond+"||", n.Right)
		default:
			if !contains(binaryOps, n.Operator) {
				p.fail(n, fmt.Sprintf("the operator %s is not part of scenario expressions", n.Operator))
				return
			}
			ast.Patch(node, call(fnPrefix+n.Operator, n.Left, n.Right))
		}
	case *ast.UnaryNode:
		switch n.Operator {
		case "-":
			ast.Patch(node, call(fnNeg, n.Node))
		case "!", "not":
			n.Node = call(fnCond+"!", n.Node)
		default:
			p.fail(n, fmt.Sprintf("the operator %s is not part of scenario expressions", n.Operator))
		}
	case *ast.CallNode:
		p.callNode(node, n)
	case *ast.MemberNode:
		if p.errAt == n.Property { // W.Hours: say why W.Hours, not why "Hours"
			p.err = nil
		}
		p.fail(n, fmt.Sprintf("%s: member access is not part of scenario expressions", n))
	case *ast.FloatNode:
		p.fail(n, fmt.Sprintf("%v: scenario arithmetic is on integers (a duration is written with its unit: 1.5s)", n.Value))
	default:
		p.fail(*node, fmt.Sprintf("%s is not part of scenario expressions (integers, durations, names, operators, min, max and if)", *node))
	}
}

// callNode patches a call of min, max or if.
func (p *exprPatcher) callNode(node *ast.Node, n *ast.CallNode) {
	id, ok := n.Callee.(*ast.IdentifierNode)
	if !ok {
		p.fail(n, fmt.Sprintf("%s is not part of scenario expressions", n.Callee))
		return
	}
	args := n.Arguments
	switch id.Value {
	case "if":
		if len(args) != 3 {
			p.fail(n, fmt.Sprintf("if takes 3 arguments (condition, then, else), got %d", len(args)))
			return
		}
		ast.Patch(node, &ast.ConditionalNode{Cond: call(fnCond+"if", args[0]), Exp1: args[1], Exp2: args[2]})
	case "min", "max":
		if len(args) < 1 {
			p.fail(n, fmt.Sprintf("%s needs at least 1 argument", id.Value))
			return
		}
		acc := call(fnPrefix+id.Value, args[0])
		if len(args) > 1 {
			acc = call(fnPrefix+id.Value, args[0], args[1])
		}
		for _, a := range args[min(len(args), 2):] {
			acc = call(fnPrefix+id.Value, acc, a)
		}
		ast.Patch(node, acc)
	default:
		p.fail(n, fmt.Sprintf("unknown function %q (known: min, max, if)", id.Value))
	}
}

func call(fn string, args ...ast.Node) *ast.CallNode {
	c := &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: args}
	c.SetLocation(args[0].Location())
	return c
}

// fail records the first error, at node.
func (p *exprPatcher) fail(node ast.Node, msg string) {
	if p.err == nil {
		p.err, p.errAt = &file.Error{Location: node.Location(), Message: msg}, node
	}
}

// maxDepth bounds the nesting of brackets and prefix operators, as the old
// parser bounded that of parentheses, minus signs and calls, so that a
// hostile expression cannot exhaust the stack of expr's recursive parser.
const maxDepth = 64

// prepared is an expression rewritten for expr's parser: its k-th duration
// literal, such as 1.5s, written as the name $k, whose value is durations[k].
type prepared struct {
	src, text string
	edits     []edit
	durations []time.Duration
}

// edit is one rewritten literal: src[from:to] became text[at:end] (bytes).
type edit struct{ from, to, at, end int }

// column returns the column in src (counted in characters from 1) of the
// byte offset at of text.
func (p prepared) column(at int) int {
	off := at
	for _, e := range p.edits {
		if at < e.at {
			break
		}
		off = e.to + at - e.end
		if at < e.end {
			off = e.from
			break
		}
	}
	return utf8.RuneCountInString(p.src[:min(off, len(p.src))]) + 1
}

// prepareExpr rewrites src's duration literals for expr and checks its
// nesting: the depth is counted as the old parser counted it, one per
// bracket and one per prefix operator still applying, so that everything
// the old parser accepted is accepted.
func prepareExpr(src string) (prepared, error) {
	p := prepared{src: src}
	var b strings.Builder
	levels := []int{0} // per open bracket: the prefix operators pending on its current operand
	operand := false   // whether the last token ends an operand
	depth := func() int {
		d := 0
		for _, m := range levels {
			d += 1 + m
		}
		return d
	}
	prefix := func() error {
		levels[len(levels)-1]++
		if depth() > maxDepth {
			return fmt.Errorf("expression nested deeper than %d", maxDepth)
		}
		return nil
	}
	for i := 0; i < len(src); {
		c := src[i]
		start := i
		switch {
		case c == '"' || c == '\'' || c == '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' && c != '`' {
					i++
				}
			}
			i = min(i+1, len(src))
			operand = true
		case strings.HasPrefix(src[i:], "//") || strings.HasPrefix(src[i:], "/*"):
			// expr would read W//2 as W and a comment; YAML has # comments
			return p, fmt.Errorf("%s at column %d: comments are not part of scenario expressions (/ is already integer division)",
				src[i:i+2], utf8.RuneCountInString(src[:i])+1)
		case isDigit(c):
			// a number, or a duration: digits, '.', and unit letters (ns, us, µs, ms, s, m, h)
			for i < len(src) && (isNameByte(src[i]) || src[i] == '.' || src[i] >= 0x80) {
				i++
			}
			lit := src[start:i]
			if _, err := strconv.ParseInt(lit, 10, 64); err != nil {
				if d, err := time.ParseDuration(lit); err == nil {
					at := b.Len()
					b.WriteString("$" + strconv.Itoa(len(p.durations)))
					p.edits = append(p.edits, edit{start, i, at, b.Len()})
					p.durations = append(p.durations, d)
					operand = true
					continue
				}
			}
			operand = true
		case c == '$':
			return p, fmt.Errorf("unexpected $ at column %d", utf8.RuneCountInString(src[:i])+1)
		case isNameByte(c) || c >= 0x80:
			for i < len(src) && (isNameByte(src[i]) || src[i] >= 0x80) {
				i++
			}
			switch src[start:i] {
			case "not", "let":
				if operand { // a not in b
					levels[len(levels)-1] = 0
				} else if err := prefix(); err != nil {
					return p, err
				}
				operand = false
			case "and", "or", "in", "matches", "contains", "startsWith", "endsWith":
				levels[len(levels)-1], operand = 0, false
			default:
				operand = true
			}
		case c == '(' || c == '[' || c == '{':
			i++
			levels, operand = append(levels, 0), false
			if depth() > maxDepth {
				return p, fmt.Errorf("expression nested deeper than %d", maxDepth)
			}
		case c == ')' || c == ']' || c == '}':
			i++
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
			levels[len(levels)-1], operand = 0, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case (c == '-' || c == '+' || c == '!') && !operand && !strings.HasPrefix(src[i:], "!="):
			i++
			if err := prefix(); err != nil {
				return p, err
			}
		default: // a binary operator, a separator, or a character expr refuses
			i++
			levels[len(levels)-1], operand = 0, false
		}
		b.WriteString(src[start:i])
	}
	p.text = b.String()
	return p, nil
}

// compileExpr compiles a scenario expression over the names it may use: L
// and client are int64, W a time.Duration, any other name (a var) a number,
// a duration or a bool. An error gives the column of the problem in src.
func compileExpr(src string, names []string) (*vm.Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	p, err := prepareExpr(src)
	if err != nil {
		return nil, err
	}
	env := types.Map{}
	for _, n := range names {
		switch n {
		case "L", "client":
			env[n] = types.Int64
		case "W":
			env[n] = types.TypeOf(time.Duration(0))
		default:
			env[n] = types.Any
		}
	}
	patcher := &exprPatcher{durations: p.durations}
	opts := append([]expr.Option{expr.Env(env), expr.Patch(patcher)}, exprOptions...)
	prog, err := expr.Compile(p.text, opts...)
	if patcher.err != nil { // before expr's error: "unknown function" rather than "unknown name"
		err = patcher.err
	}
	if err == nil {
		return prog, nil
	}
	var fe *file.Error
	if !errors.As(err, &fe) {
		return nil, err
	}
	msg := fmt.Sprintf("%s at column %d", fe.Message, p.column(runeOffset(p.text, fe.From)))
	if strings.HasPrefix(fe.Message, "unknown name ") {
		msg += " (known: " + strings.Join(names, ", ") + ")"
	}
	return nil, errors.New(msg)
}

// runeOffset returns the byte offset of the n-th character of s.
func runeOffset(s string, n int) int {
	at := 0
	for ; n > 0 && at < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[at:])
		at += size
	}
	return at
}

// vms recycles expr VMs; a VM is used by one goroutine at a time.
var vms = sync.Pool{New: func() any { return new(vm.VM) }}

// runExpr runs a compiled expression with env (the values of its names):
// it returns what expr computed (an int, an int64, a time.Duration or a
// bool) and its value.
func runExpr(prog *vm.Program, env map[string]any) (any, value, error) {
	m := vms.Get().(*vm.VM)
	out, err := m.Run(prog, env)
	vms.Put(m)
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, value{}, errors.New(fe.Message)
		}
		return nil, value{}, err
	}
	v, err := toValue(out)
	return out, v, err
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c)
}
