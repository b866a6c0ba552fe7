package custom_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ratelab/ratelab/custom"
)

// Replies as go-redis decodes them: Lua numbers and true as int64, strings
// and status replies as string, false and nil as nil, tables as []any.
var (
	one     = int64(1)
	zero    = int64(0)
	okReply = "OK"
	pair    = []any{int64(1), int64(7)}   // {allowed, remaining}
	denied  = []any{int64(0), int64(-1)}  // {denied, -1}
	nested  = []any{[]any{int64(1)}, "x"} // {{1}, "x"}
	strPair = []any{"1", "9"}             // {tostring(allowed), tostring(remaining)}
)

func TestReplyPredicateEval(t *testing.T) {
	cases := []struct {
		pred  string
		reply any
		want  bool
	}{
		// An integer reply; expr's int literal equals the reply's int64.
		{"reply == 1", one, true},
		{"reply == 1", zero, false},
		{"reply == 1", nil, false},
		{"reply == 1", okReply, false},
		{"reply == 1", pair, false},
		// The first element of an array: indexes start at 1, as in Lua.
		{"reply[1] == 1", pair, true},
		{"reply[1] == 1", denied, false},
		{"reply[2] == 7", pair, true},
		{"reply[2] >= 0", pair, true},
		{"reply[2] >= 0", denied, false},
		// Placeholders are variables: limit 10, cost 2.
		{"reply <= limit", one, true},
		{"reply <= limit", int64(11), false},
		{"reply[1] == cost", []any{int64(2)}, true},
		{"reply[1] == cost", pair, false},
		{"reply * window_ms == 1500", one, true},
		// nil is Lua false or nil.
		{"reply != nil", one, true},
		{"reply != nil", okReply, true},
		{"reply != nil", nil, false},
		{"reply == nil", nil, true},
		// Membership, on the reply and in the reply.
		{"reply in [1, 2]", one, true},
		{"reply in [1, 2]", int64(3), false},
		{"7 in reply", pair, true},
		// A status reply.
		{`reply == "OK"`, okReply, true},
		// Past-the-end, zero and negative indexes give nil, as in Lua.
		{"reply[3] == nil", pair, true},
		{"reply[0] == nil", pair, true},
		{"reply[-1] == nil", pair, true},
		// Nested arrays index from 1 too.
		{"reply[1][1] == 1", nested, true},
		{`reply[2] == "x"`, nested, true},
		// An index from a variable or an expression.
		{"reply[cost] == 7", pair, true},
		{"reply[len(reply)] == 7", pair, true},
		// Optional indexing of a nil reply.
		{"reply?.[1] == nil", nil, true},
		{"reply?.[1] == 1", pair, true},
		// Builtins see the array as it is.
		{"len(reply) == 2", pair, true},
		{"all(reply, # >= 0)", pair, true},
		{"all(reply, # >= 0)", denied, false},
		// Logic.
		{"reply[1] == 1 && reply[2] > 0", pair, true},
		{"reply == 1 || reply == 2", int64(2), true},
		{"!(reply == 0)", one, true},
		// A RESP3 map reply: keys as written; an int literal finds an int64 key.
		{`reply.status == "ok"`, map[any]any{"status": "ok"}, true},
		{`reply["status"] == "ok"`, map[any]any{"status": "ok"}, true},
		{`reply[1] == "a"`, map[any]any{int64(1): "a"}, true},
		{"reply.missing == nil", map[any]any{"status": "ok"}, true},
		// A published-style script returns tostring()s: a string Lua's
		// tonumber reads as a number compares as that number with a number.
		{"reply[1] == 1", strPair, true},
		{"reply[1] != 1", strPair, false},
		{"reply[2] <= limit", strPair, true},
		{"reply[2] > limit", strPair, false},
		{"reply[1] == 1", []any{"0", "10"}, false},
		{"reply[2] >= 0 && reply[1] == 1", []any{"1", "-1"}, false},
		{"1 == reply", " 1 ", true},
		{"reply == 16", "0x10", true},
		{"reply > 2", "2.5", true},
		{"reply == 1", "1.0", true},
		{"reply == 1", "one", false},
		{"reply == 1", "1e", false},
		// ... but a string literal compares strings, as in Lua.
		{`reply[1] == "1"`, strPair, true},
		{`reply[1] == "1"`, pair, false},
		// A predicate need not read the reply.
		{"true", nil, true},
	}
	v := custom.Values{Window: vals.Window, Limit: 10, Cost: 2}
	for i, c := range cases {
		p, err := custom.ParseReplyPredicate(c.pred)
		if err != nil {
			t.Errorf("case %d %q: %v", i, c.pred, err)
			continue
		}
		got, err := p.Eval(c.reply, v)
		if err != nil || got != c.want {
			t.Errorf("case %d %q on %#v: got %v, %v; want %v", i, c.pred, c.reply, got, err, c.want)
		}
	}
}

// Evaluation errors show the predicate and the reply, and wrap
// ErrReplyShape.
func TestReplyPredicateEvalErrors(t *testing.T) {
	cases := []struct {
		pred  string
		reply any
		want  string
	}{
		// Indexing a string, an integer, nil.
		{"reply[1] == 1", okReply, `predicate "reply[1] == 1" on reply "OK" (a string): cannot index a string with [1]`},
		{"reply[1] == 1", one, `predicate "reply[1] == 1" on reply 1 (an integer): cannot index an integer with [1]`},
		{"reply[1] == 1", nil, `predicate "reply[1] == 1" on reply nil: cannot index nil with [1]`},
		// Comparing nil or a string with a number.
		{"reply <= limit", nil, `predicate "reply <= limit" on reply nil: invalid operation: <nil> <= int64`},
		{"reply <= limit", okReply, `on reply "OK" (a string): invalid operation: string <= int64`},
		// Past the end is nil, and nil is no number.
		{"reply[2] >= 0", []any{int64(1)}, `predicate "reply[2] >= 0" on reply [1] (an array): invalid operation: <nil> >= int`},
		// A result that is not a bool: nil is not false.
		{"reply", one, `predicate "reply" on reply 1 (an integer): result 1 (an integer) is not a bool`},
		{"reply[3]", pair, "result nil is not a bool"},
		// An index that is not an integer.
		{`reply["a"] == 1`, pair, `array index "a" is not an integer`},
		{"reply.a == 1", pair, `array index "a" is not an integer`},
		{"reply[1.5] == 1", pair, "array index 1.5 is not an integer"},
		// A numeric string is a number in comparisons only: arithmetic names the fix.
		{"reply[2] * 2 > 0", strPair, `invalid operation: string * int (a string that reads as a number compares as one, but in arithmetic convert it: int(reply[1])`},
		// Long arrays are shown elided.
		{"reply", []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "x"}, `on reply [1, 2, 3, 4, 5, 6, 7, 8, ... 3 more] (an array): result`},
	}
	for i, c := range cases {
		p, err := custom.ParseReplyPredicate(c.pred)
		if err != nil {
			t.Fatalf("case %d %q: %v", i, c.pred, err)
		}
		got, err := p.Eval(c.reply, vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d %q on %#v: got %v, %v; want an error containing %q", i, c.pred, c.reply, got, err, c.want)
			continue
		}
		if got {
			t.Errorf("case %d %q: allowed with an error", i, c.pred)
		}
		if !errors.Is(err, custom.ErrReplyShape) {
			t.Errorf("case %d %q: error does not wrap ErrReplyShape: %v", i, c.pred, err)
		}
	}
}

func TestReplyPredicateParseErrors(t *testing.T) {
	cases := []struct {
		pred string
		want string
	}{
		// A typo names the variable, the position and the known names.
		{"rpely == 1", `predicate "rpely == 1", character 1: unknown name rpely (known: reply, now_us,`},
		{"reply[1] == limt", `character 13: unknown name limt`},
		// A syntax error.
		{"reply ==", `predicate "reply ==", character 8: unexpected token EOF`},
		{"reply = 1", "character 7"},
		// A predicate that cannot give a bool.
		{"limit + 1", `predicate "limit + 1", character 1: gives an integer; want a bool`},
		{`"allowed"`, "gives a string; want a bool"},
		// Slices would count from 0: refused.
		{"reply[1:2] == nil", `character 6: slices (x[i:j]) are not supported`},
		// The clock is not readable, and $env would hide which names are used.
		{"now() != nil", "unknown name now"},
		{"$env.now_ms > 0", `character 1: $env is not supported`},
		// Nothing to evaluate.
		{"", `predicate "": empty`},
		{"  ", "empty"},
		// A type error found at compile time.
		{`limit == "x" + 1`, "invalid operation: + (mismatched types string and int)"},
	}
	for i, c := range cases {
		_, err := custom.ParseReplyPredicate(c.pred)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d %q: got error %v, want one containing %q", i, c.pred, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "--") {
			t.Errorf("case %d %q: error mentions a flag: %v", i, c.pred, err)
		}
		if errors.Is(err, custom.ErrReplyShape) {
			t.Errorf("case %d %q: a parse error wraps ErrReplyShape", i, c.pred)
		}
	}
}

// ReplyIs(n) decides and fails exactly as ParseAllowedReply(reply) == n.
func TestReplyIsIsParseAllowedReply(t *testing.T) {
	replies := []any{
		one, zero, int64(-3), // integers
		pair, denied, []any{int64(1), "x"}, // arrays starting with an integer
		[]any{}, []any{"x", int64(1)}, []any{nil}, // arrays not starting with one
		okReply, "", nil, // strings, nil
		"1", strPair, []any{"0", "9"}, " -3", "1.5", // strings tonumber reads: integers count, others do not
		1,    // a Go int, which go-redis never gives: a wrong shape
		true, // a RESP3 boolean: a wrong shape
	}
	for _, n := range []int64{1, 0, -3} {
		p := custom.ReplyIs(n)
		for i, r := range replies {
			got, err := p.Eval(r, vals)
			m, werr := custom.ParseAllowedReply(r)
			want := werr == nil && m == n
			if got != want || (err == nil) != (werr == nil) {
				t.Errorf("ReplyIs(%d) reply %d (%#v): got %v, %v; want %v, %v", n, i, r, got, err, want, werr)
			}
			if err != nil && (err.Error() != werr.Error() || !errors.Is(err, custom.ErrReplyShape)) {
				t.Errorf("ReplyIs(%d) reply %d: error %q, want %q", n, i, err, werr)
			}
		}
	}
	if s := custom.ReplyIs(1).String(); s != "reply == 1, or reply[1] == 1 for an array reply" {
		t.Errorf("String() = %q", s)
	}
}

func TestReplyPredicateUses(t *testing.T) {
	p, err := custom.ParseReplyPredicate("reply[1] == cost && reply[2] <= limit")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Uses("cost") || !p.Uses("limit") || p.Uses("now_ms", "window_ms") {
		t.Errorf("Uses: cost %v limit %v now_ms/window_ms %v", p.Uses("cost"), p.Uses("limit"), p.Uses("now_ms", "window_ms"))
	}
	if custom.ReplyIs(1).Uses("cost") {
		t.Error("ReplyIs uses cost")
	}
	if p.String() != "reply[1] == cost && reply[2] <= limit" {
		t.Errorf("String() = %q", p.String())
	}
}

// The zero ReplyPredicate fails rather than deciding.
func TestReplyPredicateZero(t *testing.T) {
	var p custom.ReplyPredicate
	if ok, err := p.Eval(one, vals); ok || err == nil {
		t.Errorf("zero predicate: %v, %v", ok, err)
	}
}

// One predicate evaluated from many goroutines (run with -race).
func TestReplyPredicateConcurrentEval(t *testing.T) {
	p, err := custom.ParseReplyPredicate("reply[1] == cost")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				v := vals
				v.Cost = int64(i % 3)
				reply := []any{int64(g % 3)}
				got, err := p.Eval(reply, v)
				if want := g%3 == i%3; err != nil || got != want {
					t.Errorf("goroutine %d step %d: got %v, %v; want %v", g, i, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func ExampleParseReplyPredicate() {
	p, err := custom.ParseReplyPredicate("reply[1] == 1 && reply[2] <= limit")
	if err != nil {
		fmt.Println(err)
		return
	}
	v := custom.Values{Limit: 10}
	fmt.Println(p.Eval([]any{int64(1), int64(9)}, v))
	fmt.Println(p.Eval([]any{int64(0), int64(-1)}, v))
	fmt.Println(p.Eval("OK", v))
	// Output:
	// true <nil>
	// false <nil>
	// false predicate "reply[1] == 1 && reply[2] <= limit" on reply "OK" (a string): cannot index a string with [1]
}

func ExampleReplyIs() {
	p := custom.ReplyIs(1)
	fmt.Println(p.Eval(int64(1), custom.Values{}))
	fmt.Println(p.Eval([]any{int64(1), int64(4)}, custom.Values{}))
	fmt.Println(p.Eval([]any{int64(0), int64(4)}, custom.Values{}))
	// Output:
	// true <nil>
	// true <nil>
	// false <nil>
}

func BenchmarkReplyPredicateEval(b *testing.B) {
	for _, c := range []struct {
		name  string
		p     func() (custom.ReplyPredicate, error)
		reply any
	}{
		{"ReplyIs(1)", func() (custom.ReplyPredicate, error) { return custom.ReplyIs(1), nil }, pair},
		{"reply == 1", func() (custom.ReplyPredicate, error) { return custom.ParseReplyPredicate("reply == 1") }, one},
		{"reply[1] == 1", func() (custom.ReplyPredicate, error) { return custom.ParseReplyPredicate("reply[1] == 1") }, pair},
		{"reply[1] == cost && reply[2] <= limit", func() (custom.ReplyPredicate, error) {
			return custom.ParseReplyPredicate("reply[1] == cost && reply[2] <= limit")
		}, pair},
	} {
		p, err := c.p()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Eval(c.reply, vals); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A reply whose verdict is a numeric string reads as Lua's tonumber reads
// it; one that is not an integer stays a wrong shape.
func TestParseAllowedReplyNumericString(t *testing.T) {
	cases := []struct {
		reply any
		want  int64
		ok    bool
	}{
		{"1", 1, true},
		{strPair, 1, true},
		{[]any{" 0 ", "9"}, 0, true},
		{"0x1", 1, true},
		{"1.5", 0, false},
		{[]any{"yes"}, 0, false},
	}
	for i, c := range cases {
		got, err := custom.ParseAllowedReply(c.reply)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("case %d %#v: got %d, %v; want %d (ok %v)", i, c.reply, got, err, c.want, c.ok)
		}
	}
}
