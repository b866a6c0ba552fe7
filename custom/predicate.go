package custom

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/expr-lang/expr/vm"
)

// ReplyPredicate decides from a script's reply whether the request was
// allowed. It is either an expression (ParseReplyPredicate) or the shorthand
// "the reply is N" (ReplyIs).
//
// A ReplyPredicate is immutable and safe for concurrent use: its program is
// compiled once, and a compiled expr program is safe to run from many
// goroutines at once (each run has its own VM). The zero ReplyPredicate
// rejects every reply with an error.
type ReplyPredicate struct {
	src  string
	prog *vm.Program
	uses []string
	is   bool  // the shorthand ReplyIs(n)
	n    int64 // its n
}

// predicateEnv is the variables of a reply predicate: the Placeholders and
// reply.
type predicateEnv struct {
	templateEnv
	Reply any `expr:"reply"`
}

// ParseReplyPredicate compiles a predicate on a script's reply, in the expr
// language (https://expr-lang.org): "reply == 1", "reply[1] == 1",
// "reply <= limit", "reply[2] >= 0", "reply != nil", "reply in [1, 2]",
// "reply[1] == cost".
//
// Its variables are reply and the Placeholders (limit, cost, window_ms, ...;
// numbers as in ParseTemplate). reply is the script's reply as go-redis
// decodes it (measured with RESP2 and RESP3 connections): an int64 for a Lua
// number (Redis truncates 3.9 to 3) or Lua true; a string for a Lua string
// or {ok = "..."} status; nil for Lua false or nil, also inside an array; an
// array ([]any) for a Lua table. Any other decoded value (a map[any]any, a
// float64 or a bool from a RESP3 script) is used as it is. Comparisons mix
// integer types freely: reply == 1 is true for the int64 1.
//
// A string that Lua's tonumber reads as a number ("1", " 9", "0x1f",
// "2.5") compares as that number with a number (==, !=, <, <=, >, >=):
// reply[1] == 1 and reply[2] <= limit hold for the reply {"1", "9"} of a
// script that returns tostring(...). A comparison with a string literal is
// left as written (reply[1] == "1" compares strings; 1 == "1" is false),
// and so are arithmetic, "in" and the builtins: reply[2] * 2 on "9" is an
// evaluation error whose message names int(reply[2]).
//
// Indexing is Lua's: reply[1] is the first element of an array,
// reply[len(reply)] the last, and reply[0], negative and past-the-end
// indexes give nil (reply[5] == nil is true for a 2-element reply). A map
// indexes by key (reply.status, reply["status"], reply[1] for the int64 key
// 1). Indexing nil, a string or a number is an evaluation error; reply?.[1]
// is nil when reply is nil. len(reply), "1 in reply", all(reply, # >= 0) and
// the other builtins see the array as it is. Slices (reply[1:2]) are not
// supported; nor are now() (the clock is not readable) and $env.
//
// The expression must give a bool: one whose type is known not to be bool
// ("limit + 1") is a compile error, and one that gives anything else when
// evaluated (reply[1] on the reply [nil]) an evaluation error, since nil is
// not false. Compile errors name the predicate and the character (counted
// from 1) of the problem; they do not wrap ErrReplyShape.
func ParseReplyPredicate(src string) (ReplyPredicate, error) {
	if strings.TrimSpace(src) == "" {
		return ReplyPredicate{}, fmt.Errorf("predicate %q: empty; want an expression such as reply == 1", src)
	}
	prog, uses, err := compileExpr(src, predicateEnv{})
	if err != nil {
		return ReplyPredicate{}, exprError("predicate", src, 0, err, append([]string{"reply"}, Placeholders...))
	}
	if typ := prog.Node().Type(); typ == nil || typ.Kind() != reflect.Bool && typ.Kind() != reflect.Interface {
		return ReplyPredicate{}, sourceError("predicate", src, 0, fmt.Sprintf("gives %s; want a bool (true when the request was allowed)", describeType(typ)))
	}
	return ReplyPredicate{src: src, prog: prog, uses: uses}, nil
}

// ReplyIs returns the shorthand predicate "the reply is n": the reply is the
// integer n, or an array whose first element is the integer n. Any other
// reply shape is an error wrapping ErrReplyShape, exactly as for
// ParseAllowedReply.
func ReplyIs(n int64) ReplyPredicate {
	return ReplyPredicate{src: fmt.Sprintf("reply == %d, or reply[1] == %d for an array reply", n, n), is: true, n: n}
}

// isZero reports the zero ReplyPredicate.
func (p ReplyPredicate) isZero() bool { return !p.is && p.prog == nil && p.src == "" }

// String returns the predicate as written, or for ReplyIs a description.
func (p ReplyPredicate) String() string { return p.src }

// Uses reports whether the predicate names any of the placeholders.
func (p ReplyPredicate) Uses(names ...string) bool {
	for _, u := range p.uses {
		for _, n := range names {
			if u == n {
				return true
			}
		}
	}
	return false
}

// Eval reports whether reply satisfies the predicate, with the placeholders
// taken from v. When the predicate cannot be evaluated on reply (a string
// indexed, nil compared with a number, a result that is not a bool), the
// error wraps ErrReplyShape and shows the predicate and the reply:
//
//	predicate "reply[1] == 1" on reply "OK" (a string): cannot index a string with [1]
//
// For ReplyIs, Eval is ParseAllowedReply(reply) == n, with its errors.
func (p ReplyPredicate) Eval(reply any, v Values) (bool, error) {
	if p.is {
		n, err := ParseAllowedReply(reply)
		if err != nil {
			return false, err
		}
		return n == p.n, nil
	}
	if p.prog == nil {
		return false, &predicateError{pred: p.src, reply: reply, msg: "no predicate (the zero ReplyPredicate)"}
	}
	env := predicateEnv{Reply: reply}
	if len(p.uses) > 0 {
		env.templateEnv = newTemplateEnv(v)
	}
	out, err := runProgram(p.prog, &env)
	if err != nil {
		msg := exprMessage(err)
		if strings.HasPrefix(msg, "invalid operation") && strings.Contains(msg, "string") {
			msg += " (a string that reads as a number compares as one, but in arithmetic convert it: int(reply[1]), float(reply[1]))"
		}
		return false, &predicateError{pred: p.src, reply: reply, msg: msg}
	}
	b, ok := out.(bool)
	if !ok {
		return false, &predicateError{pred: p.src, reply: reply, msg: fmt.Sprintf("result %s is not a bool", describeValue(out))}
	}
	return b, nil
}

// predicateError is an evaluation error of a predicate on a reply.
type predicateError struct {
	pred  string
	reply any
	msg   string
}

func (e *predicateError) Error() string {
	return fmt.Sprintf("predicate %q on reply %s: %s", e.pred, describeValue(e.reply), e.msg)
}

// Is makes a predicateError match ErrReplyShape: the reply is not one the
// predicate can judge.
func (e *predicateError) Is(target error) bool { return target == ErrReplyShape }

// describeValue shows a reply and its Redis type: `"OK" (a string)`,
// `1 (an integer)`, `nil`, `[1, "x"] (an array)`.
func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return formatValue(v) + " (a string)"
	case int64, int:
		return formatValue(v) + " (an integer)"
	case []any:
		return formatValue(v) + " (an array)"
	}
	return fmt.Sprintf("%s (a %T)", formatValue(v), v)
}
