package clientside

// A script's budget: time (the ctx of Run, checked by the VM between
// instructions and by the string functions as they work), string size
// (MaxString, checked before a string is built) and memory (a watchdog on
// the Go heap that stops every script under way).

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// MaxString is the largest string a script may build, in bytes: Redis's
// proto-max-bulk-len default (512 MB), the largest string Redis takes. A
// longer result of string.rep, string.format, string.gsub, table.concat
// or .. is an error before any of it is allocated.
const MaxString = 512 << 20

// ErrStopped is wrapped by a *StoppedError.
var ErrStopped = errors.New("script stopped")

// ErrMemory is the cause of scripts the memory watchdog stopped.
var ErrMemory = errors.New("ratelab's memory passed its bound while client-side scripts ran")

// StoppedError is the error of a run stopped while its Lua ran (not while
// it waited for Redis): its ctx ended (the call's time bound, a signal)
// or the memory watchdog stopped it.
type StoppedError struct {
	// Script is the script's name; Line its line when stopped (0: unknown).
	Script string
	Line   int
	// Ran is how long the run had gone when it stopped.
	Ran time.Duration
	// Cause is the ctx's cause: context.DeadlineExceeded for a call's
	// time bound, ErrMemory, a signal's cause.
	Cause error
}

func (e *StoppedError) Error() string {
	at := e.Script
	if e.Line > 0 {
		at = fmt.Sprintf("%s:%d", e.Script, e.Line)
	}
	if errors.Is(e.Cause, context.DeadlineExceeded) {
		return fmt.Sprintf("%s: stopped after %s: the script's Lua ran past its call's time bound", at, e.Ran.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: stopped after %s: %v", at, e.Ran.Round(time.Millisecond), e.Cause)
}

// Unwrap returns ErrStopped and the cause (ErrMemory for the
// watchdog's, a cancelled ctx's cause), except a deadline: a run stopped
// while its Lua ran is not a call that Redis left unanswered, so
// errors.Is(err, context.DeadlineExceeded) is false.
func (e *StoppedError) Unwrap() []error {
	if errors.Is(e.Cause, context.DeadlineExceeded) {
		return []error{ErrStopped}
	}
	return []error{ErrStopped, e.Cause}
}

// Memory watchdog: while any run is under way, every watchEvery the Go
// heap (objects, runtime/metrics) is read; above heapLimit a collection
// runs, and if the heap is still above it every run under way is
// cancelled with ErrMemory. What it guarantees: the heap passes heapLimit
// by at most what scripts allocate in one watchEvery plus one string
// (each at most MaxString, its builder's capacity at most twice that)
// before the scripts stop at their next instruction.
var (
	heapLimit  uint64 = 2 << 30
	watchEvery        = 10 * time.Millisecond
)

var watch struct {
	mu      sync.Mutex
	runs    map[*context.CancelCauseFunc]struct{}
	polling bool // watchHeap runs
}

// watched returns ctx with a cancel the watchdog can call, and the func
// that ends the watch (call it when the run ends).
func watched(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	watch.mu.Lock()
	if watch.runs == nil {
		watch.runs = map[*context.CancelCauseFunc]struct{}{}
	}
	if !watch.polling {
		watch.polling = true
		go watchHeap()
	}
	watch.runs[&cancel] = struct{}{}
	watch.mu.Unlock()
	return ctx, func() {
		watch.mu.Lock()
		delete(watch.runs, &cancel)
		watch.mu.Unlock()
		cancel(nil)
	}
}

// watchHeap polls the heap until no run is under way.
func watchHeap() {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for range t.C {
		watch.mu.Lock()
		n, limit := len(watch.runs), heapLimit
		if n == 0 {
			watch.polling = false
			watch.mu.Unlock()
			return
		}
		watch.mu.Unlock()
		if heapBytes() <= limit {
			continue
		}
		runtime.GC() // garbage counts until swept: judge what is live
		used := heapBytes()
		watch.mu.Lock()
		if limit = heapLimit; used > limit {
			err := fmt.Errorf("%w (%d MiB over a bound of %d MiB)", ErrMemory, used>>20, limit>>20)
			for c := range watch.runs {
				(*c)(err)
			}
		}
		watch.mu.Unlock()
	}
}

// stopped is the error of a run whose ctx ended while its Lua ran, at the
// position where (a Lua message's "name:line:" prefix).
func stopped(ctx context.Context, name string, msg string, ran time.Duration) error {
	return &StoppedError{Script: name, Line: lineOf(name, msg), Ran: ran, Cause: context.Cause(ctx)}
}

// lineOf reads the line from a Lua error message "name:line: ...".
func lineOf(name, msg string) int {
	var line int
	rest, ok := cutPrefix(msg, name+":")
	if !ok {
		return 0
	}
	if _, err := fmt.Sscanf(rest, "%d:", &line); err != nil {
		return 0
	}
	return line
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// tick is the string functions' budget: every 1024 steps the run's ctx is
// checked, and a done ctx raises the error that ends the run.
type tick struct {
	L *lua.LState
	n int
}

func (t *tick) step() {
	t.n++
	if t.n&1023 != 0 {
		return
	}
	if ctx := t.L.Context(); ctx != nil && ctx.Err() != nil {
		t.L.RaiseError("%s", ctx.Err().Error())
	}
}

// tooLong raises the error of a string longer than MaxString.
func tooLong(L *lua.LState, fn string, n float64) {
	L.RaiseError("%s: the result would be %.0f bytes, more than the %d a Redis string holds (proto-max-bulk-len)", fn, n, MaxString)
}

// rewriteConcat makes every .. in chunk a call of the local concatGlobal
// (concat below), which checks the length before it joins, and puts the
// local before the chunk's first statement. A chain a..b..c is one call,
// as the VM joins it at once.
func rewriteConcat(chunk []ast.Stmt) []ast.Stmt {
	w := concatWalker{}
	w.stmts(chunk)
	local := &ast.LocalAssignStmt{Names: []string{concatGlobal}, Exprs: []ast.Expr{&ast.IdentExpr{Value: concatGlobal}}}
	if len(chunk) > 0 {
		local.SetLine(chunk[0].Line())
		local.SetLastLine(chunk[0].Line())
	}
	return append([]ast.Stmt{local}, chunk...)
}

type concatWalker struct{}

func (w concatWalker) stmts(ss []ast.Stmt) {
	for _, s := range ss {
		w.stmt(s)
	}
}

func (w concatWalker) exprs(es []ast.Expr) {
	for i := range es {
		es[i] = w.expr(es[i])
	}
}

func (w concatWalker) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.exprs(s.Lhs)
		w.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = w.expr(s.Expr)
	case *ast.DoBlockStmt:
		w.stmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = w.expr(s.Condition)
		w.stmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = w.expr(s.Condition)
		w.stmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = w.expr(s.Condition)
		w.stmts(s.Then)
		w.stmts(s.Else)
	case *ast.NumberForStmt:
		s.Init, s.Limit = w.expr(s.Init), w.expr(s.Limit)
		if s.Step != nil {
			s.Step = w.expr(s.Step)
		}
		w.stmts(s.Stmts)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs)
		w.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			s.Name.Func = w.expr(s.Name.Func)
			s.Name.Receiver = w.expr(s.Name.Receiver)
		}
		w.expr(s.Func)
	case *ast.ReturnStmt:
		w.exprs(s.Exprs)
	}
}

func (w concatWalker) expr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case nil:
		return nil
	case *ast.AttrGetExpr:
		x.Object, x.Key = w.expr(x.Object), w.expr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			f.Key, f.Value = w.expr(f.Key), w.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		x.Func, x.Receiver = w.expr(x.Func), w.expr(x.Receiver)
		w.exprs(x.Args)
	case *ast.LogicalOpExpr:
		x.Lhs, x.Rhs = w.expr(x.Lhs), w.expr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs, x.Rhs = w.expr(x.Lhs), w.expr(x.Rhs)
	case *ast.ArithmeticOpExpr:
		x.Lhs, x.Rhs = w.expr(x.Lhs), w.expr(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		x.Expr = w.expr(x.Expr)
	case *ast.UnaryNotOpExpr:
		x.Expr = w.expr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = w.expr(x.Expr)
	case *ast.FunctionExpr:
		w.stmts(x.Stmts)
	case *ast.StringConcatOpExpr:
		var args []ast.Expr
		var cur ast.Expr = x
		for {
			c, ok := cur.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			args = append(args, w.expr(c.Lhs))
			cur = c.Rhs
		}
		args = append(args, w.expr(cur))
		for _, a := range args {
			// an operand is one value, as for any operator
			switch a := a.(type) {
			case *ast.FuncCallExpr:
				a.AdjustRet = true
			case *ast.Comma3Expr:
				a.AdjustRet = true
			}
		}
		call := &ast.FuncCallExpr{Func: &ast.IdentExpr{Value: concatGlobal}, Args: args, AdjustRet: true}
		call.SetLine(x.Line())
		call.SetLastLine(x.LastLine())
		call.Func.SetLine(x.Line())
		call.Func.SetLastLine(x.LastLine())
		return call
	}
	return e
}

// concat is the .. operator with the length checked first: its arguments
// are the operands of one chain, joined right to left as the VM does (a
// run of strings and numbers at once; a __concat metamethod for a pair
// that is not both strings or numbers).
func concat(L *lua.LState) int {
	n := L.GetTop()
	rhs := L.Get(n)
	for i := n - 1; i >= 1; {
		lhs := L.Get(i)
		if lua.LVCanConvToString(lhs) && lua.LVCanConvToString(rhs) {
			j := i
			for j > 1 && lua.LVCanConvToString(L.Get(j-1)) {
				j--
			}
			size := float64(len(lua.LVAsString(rhs)))
			for k := j; k <= i; k++ {
				size += float64(len(lua.LVAsString(L.Get(k))))
			}
			if size > MaxString {
				tooLong(L, "..", size)
			}
			parts := make([]string, 0, i-j+2)
			for k := j; k <= i; k++ {
				parts = append(parts, lua.LVAsString(L.Get(k)))
			}
			parts = append(parts, lua.LVAsString(rhs))
			rhs = lua.LString(joinStrings(parts, int(size)))
			i = j - 1
			continue
		}
		op := L.GetMetaField(lhs, "__concat")
		if op == lua.LNil {
			op = L.GetMetaField(rhs, "__concat")
		}
		if op == lua.LNil {
			bad := lhs
			if lua.LVCanConvToString(lhs) {
				bad = rhs
			}
			L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
		}
		L.Push(op)
		L.Push(lhs)
		L.Push(rhs)
		L.Call(2, 1)
		rhs = L.Get(-1)
		L.Pop(1)
		i--
	}
	L.Push(rhs)
	return 1
}

func joinStrings(parts []string, size int) string {
	var b strings.Builder
	b.Grow(size)
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
}
