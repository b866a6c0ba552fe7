package algorithms

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// Lua-style indexing in template and predicate expressions.

// Names of the functions that indexing is rewritten to. They contain a
// space so that no expression can name them.
const (
	luaIndexFn         = "lua index"
	luaOptionalIndexFn = "lua optional index"
)

// indexRewriter is an expr patcher that records the Placeholders an
// expression names and makes indexing behave as in Lua: it rewrites x[i],
// x.name and x?.[i] to calls of luaIndex and luaOptionalIndex. Method calls
// are left to expr. Slices and $env (which would hide the names used) are
// refused: err is set.
type indexRewriter struct {
	names nameCollector
	err   error
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
