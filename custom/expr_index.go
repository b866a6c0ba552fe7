package custom

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// Lua-style indexing in template and predicate expressions, and
// comparisons that read a numeric string as a number.

// Names of the functions that indexing is rewritten to. They contain a
// space so that no expression can name them.
const (
	luaIndexFn         = "lua index"
	luaOptionalIndexFn = "lua optional index"
)

// indexRewriter is an expr patcher that records the Placeholders an
// expression names and makes indexing behave as in Lua: it rewrites x[i],
// x.name and x?.[i] to calls of luaIndex and luaOptionalIndex, and with
// compare the comparisons to luaCompare's. Method calls
// are left to expr. Slices and $env (which would hide the names used) are
// refused: err is set.
type indexRewriter struct {
	names nameCollector
	err   error
	// compare rewrites comparisons to luaCompare's (reply predicates; a
	// template's comparison keeps its bool type, which a template refuses)
	compare bool
}

func (r *indexRewriter) Visit(node *ast.Node) {
	r.names.Visit(node)
	switch n := (*node).(type) {
	case *ast.SliceNode:
		r.fail(n, "slices (x[i:j]) are not supported; index elements one at a time, from 1 as in Lua: x[1]")
	case *ast.IdentifierNode:
		if n.Value == "$env" {
			r.fail(n, "$env is not supported; name the variables")
		}
	case *ast.BinaryNode:
		fn, ok := luaCompareFns[n.Operator]
		if !ok || !r.compare || literalNonNumber(n.Left) || literalNonNumber(n.Right) {
			return
		}
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: []ast.Node{n.Left, n.Right}})
	case *ast.MemberNode:
		if n.Method {
			return
		}
		fn := luaIndexFn
		if n.Optional {
			fn = luaOptionalIndexFn
		}
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: []ast.Node{n.Node, n.Property}})
	}
}

// luaCompareFns are the functions the comparisons are rewritten to (names
// no expression can write), by operator.
var luaCompareFns = map[string]string{"==": "lua ==", "!=": "lua !=", "<": "lua <", "<=": "lua <=", ">": "lua >", ">=": "lua >="}

// literalNonNumber reports a string, nil or bool literal: a comparison with
// one is left as written ("1" == reply compares strings, as in Lua).
func literalNonNumber(n ast.Node) bool {
	switch n.(type) {
	case *ast.StringNode, *ast.NilNode, *ast.BoolNode:
		return true
	}
	return false
}

// luaCompare returns the function of a comparison op of runtime (Equal,
// Less, ...): when one operand is a number and the other a string that
// Lua's tonumber reads as a number ("1", " 9 ", "0x10", "2.5e3"), the
// string is compared as that number, so a script that returns {"1", "9"}
// is read as its author reads it; anything else is compared as expr does.
func luaCompare(op func(a, b any) bool) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		a, b := args[0], args[1]
		if isNumber(a) {
			b = stringAsNumber(b)
		} else if isNumber(b) {
			a = stringAsNumber(a)
		}
		return op(a, b), nil
	}
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	}
	return false
}

// stringAsNumber is v read as Lua's tonumber reads a string (surrounding
// space allowed; decimal integers as int64, 0x hex, else a finite
// decimal float), or v unchanged when it is no such string.
func stringAsNumber(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	t := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n
	}
	if h, found := strings.CutPrefix(strings.ToLower(t), "0x"); found {
		if n, err := strconv.ParseUint(h, 16, 63); err == nil {
			return int64(n)
		}
		return v
	}
	if t == "" || strings.ContainsAny(t, "_xXpP") {
		return v
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f
	}
	return v
}

// fail records the first error, at node.
func (r *indexRewriter) fail(node ast.Node, msg string) {
	if r.err == nil {
		r.err = &file.Error{Location: node.Location(), Message: msg}
	}
}

// luaIndex is x[i] as in Lua: element i of an array counting from 1, nil
// past either end; the value at key i of a map, nil if absent (an integer
// key also matches the int64 key go-redis decodes). Indexing anything else
// is an error.
func luaIndex(args ...any) (any, error) {
	x, i := args[0], args[1]
	if x == nil {
		return nil, fmt.Errorf("cannot index nil with [%s]", formatValue(i))
	}
	if a, ok := x.([]any); ok { // the common case, without reflection
		k, ok := toIndex(i)
		if !ok {
			return nil, fmt.Errorf("array index %s is not an integer", formatValue(i))
		}
		if k < 1 || k > int64(len(a)) {
			return nil, nil
		}
		return a[k-1], nil
	}
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Slice, reflect.Array:
		k, ok := toIndex(i)
		if !ok {
			return nil, fmt.Errorf("array index %s is not an integer", formatValue(i))
		}
		if k < 1 || k > int64(v.Len()) {
			return nil, nil
		}
		return v.Index(int(k - 1)).Interface(), nil
	case reflect.Map:
		keys := []any{i}
		if k, ok := toIndex(i); ok {
			keys = append(keys, k)
		}
		for _, key := range keys {
			kv := reflect.ValueOf(key)
			if !kv.IsValid() || !kv.Comparable() || !kv.Type().AssignableTo(v.Type().Key()) {
				continue
			}
			if e := v.MapIndex(kv); e.IsValid() {
				return e.Interface(), nil
			}
		}
		return nil, nil
	}
	return nil, fmt.Errorf("cannot index %s with [%s]", describeKind(x), formatValue(i))
}

// luaOptionalIndex is x?.[i]: nil for a nil x, else luaIndex.
func luaOptionalIndex(args ...any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	return luaIndex(args...)
}

// toIndex converts an integer, or a whole float, to an index.
func toIndex(i any) (int64, bool) {
	switch k := i.(type) {
	case int:
		return int64(k), true
	case int64:
		return k, true
	case int32:
		return int64(k), true
	case float64:
		if k == math.Trunc(k) && math.Abs(k) < 1<<53 {
			return int64(k), true
		}
	}
	return 0, false
}

func describeKind(x any) string {
	switch x.(type) {
	case string:
		return "a string"
	case int64, int:
		return "an integer"
	case bool:
		return "a bool"
	case float64:
		return "a float"
	}
	return fmt.Sprintf("a %T", x)
}

// formatValue writes v compactly, quoting strings and eliding long arrays.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		if len(x) > 64 {
			return strconv.Quote(x[:64]) + "..."
		}
		return strconv.Quote(x)
	case []any:
		parts := make([]string, 0, len(x))
		for i, e := range x {
			if i == 8 {
				parts = append(parts, fmt.Sprintf("... %d more", len(x)-i))
				break
			}
			parts = append(parts, formatValue(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%v", v)
}
