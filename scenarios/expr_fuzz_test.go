package scenarios

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The expr language against the old hand-written one (legacy_expr_test.go),
// on the names a scenario file gives its expressions: L and W, client, and
// vars n (a number), d (a duration), c (a comparison: the number 1 before
// expr, the bool true now) and z (zero). X is an unknown name.
var legacyNames = []string{"L", "W", "client", "n", "d", "c", "z"}

// legacyEnvs are the values of L and W the comparison runs with; the other
// names are fixed.
var legacyEnvs = []struct {
	l int64
	w time.Duration
}{
	{50, 10 * time.Second}, {1, time.Nanosecond}, {2, 7 * time.Millisecond}, {9500, 24 * time.Hour},
	{math.MaxInt64, time.Duration(math.MaxInt64)}, {3, time.Second},
}

// compareLegacy evaluates src with both languages and fails t where they
// disagree, apart from the differences ParseScenario documents:
//
//   - The old language computed or failed alike: the same value and kind, or
//     the same error message.
//   - Unknown names and functions and a wrong number of arguments are now
//     compile errors, found in every branch of if and whatever the order of
//     evaluation: the old language reported them only when it evaluated
//     them. Such a difference is accepted when the old tree has one.
//   - What the old parser refused may now be an expression of expr's (1 < L
//     < 100, 1_000, 0x10, a newline between tokens, &&): accepted without a
//     comparison.
func compareLegacy(t *testing.T, src string, env int) (class string) {
	t.Helper()
	e := legacyEnvs[env%len(legacyEnvs)]
	oldEnv := map[string]legacyValue{
		"L": {e.l, legacyNumber}, "W": {int64(e.w), legacyDuration}, "client": {2, legacyNumber},
		"n": {7, legacyNumber}, "d": {int64(3 * time.Millisecond), legacyDuration}, "c": {1, legacyNumber}, "z": {0, legacyNumber},
	}
	newEnv := map[string]any{"L": e.l, "W": e.w, "client": int64(2), "n": int64(7), "d": 3 * time.Millisecond, "c": true, "z": int64(0)}

	tree, perr := legacyParseExpr(src)
	var want legacyValue
	var werr error
	if perr == nil {
		want, werr = tree.eval(oldEnv)
	}
	prog, cerr := compileExpr(src, legacyNames)
	var got value
	var gerr error
	if cerr == nil {
		_, got, gerr = runExpr(prog, newEnv)
	}
	switch {
	case perr != nil:
		if cerr == nil && gerr == nil {
			return "old refused, new accepts"
		}
		return "both refuse"
	case cerr != nil:
		if legacyStatic(tree) != "" {
			return "found at compile time"
		}
		t.Fatalf("%q (L %d, W %s): old %v, %v; new compile error: %v", src, e.l, e.w, want, werr, cerr)
	case werr != nil:
		if gerr == nil || gerr.Error() != werr.Error() {
			t.Fatalf("%q (L %d, W %s): old error %q; new %v, %v", src, e.l, e.w, werr, got, gerr)
		}
		return "same error"
	case gerr != nil || got.n != want.n || got.k.String() != want.k.String():
		t.Fatalf("%q (L %d, W %s): old %v (%s); new %v (%s), %v", src, e.l, e.w, want, want.k, got, got.k, gerr)
	}
	return "same value"
}

// legacyStatic returns what in an old tree the expr language refuses at
// compile time: an unknown name or function, or a wrong number of arguments.
func legacyStatic(n legacyNode) string {
	switch n := n.(type) {
	case legacyName:
		if !contains(legacyNames, n.name) {
			return "unknown name " + n.name
		}
	case legacyNeg:
		return legacyStatic(n.x)
	case legacyBin:
		if why := legacyStatic(n.l); why != "" {
			return why
		}
		return legacyStatic(n.r)
	case legacyCall:
		switch {
		case n.fn != "if" && n.fn != "min" && n.fn != "max":
			return "unknown function " + n.fn
		case n.fn == "if" && len(n.args) != 3, len(n.args) == 0:
			return "arguments of " + n.fn
		}
		for _, a := range n.args {
			if why := legacyStatic(a); why != "" {
				return why
			}
		}
	}
	return ""
}

// exprGen writes an expression of the old grammar from fuzz bytes: each
// byte chooses, and once they run out every choice is the first (a leaf).
type exprGen struct {
	b     []byte
	depth int
	out   strings.Builder
}

func (g *exprGen) next(n int) int {
	if len(g.b) == 0 {
		return 0
	}
	c := int(g.b[0])
	g.b = g.b[1:]
	return c % n
}

var (
	genLeaves = []string{"1", "0", "L", "W", "n", "d", "c", "z", "client", "1ms", "1.5s", "10us", "3µs", "2h45m", "0s", "1ns",
		"7", "100", "20", "24", "60", "1800", "9223372036854775807", "9223372036854775807ns", "X", "007", "1e3", "1_000", "0x10", "1.5"}
	genBinary = []string{"+", "-", "*", "/", "%", "+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!="}
	genSpaces = []string{"", " ", "", "  ", "\t", ""}
)

func (g *exprGen) space() { g.out.WriteString(genSpaces[g.next(len(genSpaces))]) }

// expr writes one expression; at the top and inside brackets a comparison
// may come, elsewhere only sums, as in the old grammar (plus, now and then,
// something it refuses).
func (g *exprGen) expr(cmp bool) {
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > 12 {
		g.out.WriteString(genLeaves[g.next(len(genLeaves))])
		return
	}
	g.space()
	switch g.next(8) {
	case 0, 1: // a leaf
		g.out.WriteString(genLeaves[g.next(len(genLeaves))])
	case 2: // unary minus
		g.out.WriteString("-")
		g.expr(false)
	case 3, 4: // a binary operator
		op := genBinary[g.next(len(genBinary))]
		if !cmp && g.next(8) != 0 {
			op = genBinary[g.next(5)] // an arithmetic one
		}
		if cmp && op[0] != '<' && op[0] != '>' && op[0] != '=' && op[0] != '!' {
			// arithmetic at comparison level: its operands are sums
			g.expr(false)
		} else {
			g.term()
		}
		g.space()
		g.out.WriteString(op)
		g.space()
		g.term()
	case 5: // parentheses
		g.out.WriteString("(")
		g.expr(true)
		g.out.WriteString(")")
	case 6: // a call
		fn := []string{"min", "max", "if", "if", "min", "foo"}[g.next(6)]
		args := g.next(5)
		if fn == "if" && g.next(4) != 0 {
			args = 3
		}
		g.out.WriteString(fn)
		g.space()
		g.out.WriteString("(")
		for i := range args {
			if i > 0 {
				g.out.WriteString(",")
				g.space()
			}
			g.expr(true)
		}
		g.out.WriteString(")")
	case 7: // a sum or product chain
		g.term()
		for range 1 + g.next(3) {
			g.out.WriteString(genBinary[g.next(5)])
			g.term()
		}
	}
	g.space()
}

// term writes an operand of an arithmetic operator: a leaf, or something in
// brackets, so that precedence is the parser's to get right only where the
// chain is flat.
func (g *exprGen) term() {
	if g.next(3) == 0 {
		g.out.WriteString("(")
		g.expr(true)
		g.out.WriteString(")")
		return
	}
	g.expr(false)
}

// FuzzExprLegacy compares the expr language of scenario files with the
// hand-written one it replaced: for an expression written by the fuzzer and
// one generated from the old grammar, both evaluate to the same value and
// kind, or fail with the same message, apart from the differences
// compareLegacy accepts.
func FuzzExprLegacy(f *testing.F) {
	for _, s := range []string{"-W/10", "min(1ms, W/(20*L))", "if(L<3,0,W/L/4)", "1.5h%7s", "((", "max()", "9223372036854775807*2",
		"P*(7*client)/60", "max(1, L/2)", "if(L < 3, 0, W/n/4)", "W/1ms", "(L == 50) + (L != 50)", "if(c, W, 1/0)", "min(1, W, 1/0)",
		"-d % 0", "W % 2", "- - -1", "if(1, 2, X)", "1 < 2 < 3", "1_000"} {
		f.Add(s, []byte{}, uint8(0))
	}
	f.Add("", []byte{3, 6, 2, 4, 4, 0, 1}, uint8(1))
	f.Add("", []byte{6, 2, 3, 1, 0, 9, 9, 7, 1, 2}, uint8(4))
	f.Fuzz(func(t *testing.T, src string, gen []byte, env uint8) {
		compareLegacy(t, src, int(env))
		g := &exprGen{b: gen}
		g.expr(true)
		compareLegacy(t, g.out.String(), int(env))
	})
}

// TestExprLegacyGenerated runs the comparison on a fixed sweep of generated
// expressions, so that go test covers what the fuzzer explores, and checks
// that most of them are ones the old language evaluated.
func TestExprLegacyGenerated(t *testing.T) {
	classes := map[string]int{}
	for i := range 20000 {
		seed := make([]byte, 64)
		x := uint64(i)*0x9E3779B97F4A7C15 + 1
		for j := range seed {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			seed[j] = byte(x)
		}
		g := &exprGen{b: seed}
		g.expr(true)
		classes[compareLegacy(t, g.out.String(), i)]++
	}
	t.Logf("classes: %v", classes)
	if classes["same value"] < 2000 || classes["same error"] < 1000 {
		t.Errorf("the generator hardly reaches expressions both languages evaluate: %v", classes)
	}
}
