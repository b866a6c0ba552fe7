package custom_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom"
)

// vals is the request every template test fills: 2026-01-01 00:00:00.123456
// UTC, a 1.5 s window of 10, cost 2.
var vals = custom.Values{
	Now:       time.UnixMicro(1767225600123456),
	Window:    1500 * time.Millisecond,
	Limit:     10,
	Cost:      2,
	RequestID: "r-1",
	Key:       "user:42",
}

// withWindow is vals with another window.
func withWindow(w time.Duration) custom.Values {
	v := vals
	v.Window = w
	return v
}

func TestTemplateFill(t *testing.T) {
	cases := []struct {
		tpl  string
		v    *custom.Values // nil: vals
		want string
	}{
		// Lone placeholders render their values' exact text.
		{tpl: "{now_us}", want: "1767225600123456"},
		{tpl: "{now_ms}", want: "1767225600123"},
		{tpl: "{now_s}", want: "1767225600.123456"},
		{tpl: "{window_us}", want: "1500000"},
		{tpl: "{window_ms}", want: "1500"},
		{tpl: "{window_s}", want: "1.5"},
		{tpl: "{limit}", want: "10"},
		{tpl: "{cost}", want: "2"},
		{tpl: "{request_id}", want: "r-1"},
		// key is new, and fills like request_id.
		{tpl: "{key}", want: "user:42"},
		// A whole number of seconds has no decimal point.
		{tpl: "{window_s}", v: ptr(withWindow(10 * time.Second)), want: "10"},
		// Placeholders inside literal text, as in the seed scripts' ARGV.
		{tpl: "[[{window_s}, {limit}]]", want: "[[1.5, 10]]"},
		{tpl: `{"a":{cost}}`, want: `{"a":2}`},
		{tpl: "{limit}{cost}", want: "102"},
		// Braces that do not start with a lower-case letter or _ are text.
		{tpl: "{ limit }", want: "{ limit }"},
		{tpl: "{1}", want: "{1}"},
		{tpl: "{$env.now_ms}", want: "{$env.now_ms}"},
		{tpl: "{Limit}", want: "{Limit}"},
		{tpl: "}{", want: "}{"},
		{tpl: "{", want: "{"},
		// The examples of the brief: a window number, a rate, whole seconds, a
		// key of the previous window.
		{tpl: "{floor(now_ms / window_ms)}", want: "1178150400"},
		{tpl: "{limit / window_s}", want: "6.666666666666667"},
		{tpl: "{floor(now_s)}", want: "1767225600"},
		{tpl: "{key}:{floor(now_ms / window_ms) - 1}", want: "user:42:1178150399"},
		// "/" is float division, rendered without a decimal point when whole.
		{tpl: "{limit / window_s}", v: ptr(withWindow(time.Second)), want: "10"},
		{tpl: "{limit / window_s}", v: ptr(withWindow(2 * time.Second)), want: "5"},
		{tpl: "{limit * 2 / 3}", want: "6.666666666666667"},
		{tpl: "{cost / 4}", want: "0.5"},
		// Integer arithmetic stays exact past 2^53.
		{tpl: "{now_us * 1000}", want: "1767225600123456000"},
		{tpl: "{now_us + 1}", want: "1767225600123457"},
		{tpl: "{now_ms % window_ms}", want: "123"},
		{tpl: "{limit - cost}", want: "8"},
		{tpl: "{limit * -1}", want: "-10"},
		// Seconds are numbers inside an expression.
		{tpl: "{now_s + 0}", want: "1767225600.123456"},
		{tpl: "{ceil(now_s)}", want: "1767225601"},
		{tpl: "{window_s * 2}", want: "3"},
		{tpl: "{window_us / 1e6}", want: "1.5"},
		{tpl: "{round(limit / 3)}", want: "3"},
		{tpl: "{ceil(cost / 4)}", want: "1"},
		// No "-0".
		{tpl: "{limit * -0.0}", want: "0"},
		// Whole floats past 2^63 still print every digit, without exponent.
		{tpl: "{now_us * 1e6}", want: "1767225600123456000000"},
		// Strings join with +, and convert with string().
		{tpl: `{key + ":" + request_id}`, want: "user:42:r-1"},
		{tpl: `{string(limit) + "x"}`, want: "10x"},
		{tpl: "{upper(key)}", want: "USER:42"},
		// Arrays index from 1, as in Lua (past the end: TestTemplateRenderErrors).
		{tpl: `{split(key, ":")[2]}`, want: "42"},
		// An expression without spaces inside the braces is still one.
		{tpl: "{now_us }", want: "1767225600123456"},
		// The escape for a literal "{name}": a string expression.
		{tpl: `{string("{abc}")}`, want: "{abc}"},
		// Braces and quotes inside an expression do not end it.
		{tpl: `{key + "}"}x`, want: "user:42}x"},
		{tpl: `{get({"a": limit}, "a")}`, want: "10"},
		// A conditional.
		{tpl: "{cost > 1 ? limit : 0}", want: "10"},
	}
	for i, c := range cases {
		v := vals
		if c.v != nil {
			v = *c.v
		}
		tpl, err := custom.ParseTemplate(c.tpl)
		if err != nil {
			t.Errorf("case %d %q: %v", i, c.tpl, err)
			continue
		}
		got, err := tpl.Render(v)
		if err != nil || got != c.want {
			t.Errorf("case %d %q: got %q, %v; want %q", i, c.tpl, got, err, c.want)
		}
		if fill := tpl.Fill(v); fill != got {
			t.Errorf("case %d %q: Fill %q, Render %q", i, c.tpl, fill, got)
		}
		if tpl.String() != c.tpl {
			t.Errorf("case %d: String() %q, want %q", i, tpl.String(), c.tpl)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Every placeholder is a variable of expressions too.
func TestTemplatePlaceholdersAreVariables(t *testing.T) {
	for _, name := range custom.Placeholders {
		alone, err := custom.ParseTemplate("{" + name + "}")
		if err != nil {
			t.Fatalf("{%s}: %v", name, err)
		}
		inExpr, err := custom.ParseTemplate("{" + name + " }")
		if err != nil {
			t.Fatalf("{%s }: %v", name, err)
		}
		if !alone.Uses(name) || !inExpr.Uses(name) {
			t.Errorf("{%s}: Uses(%q) false", name, name)
		}
		// Integers and strings render alike both ways; seconds differ only
		// in being floats (checked in TestTemplateFill).
		a, b := alone.Fill(vals), inExpr.Fill(vals)
		if a != b {
			t.Errorf("{%s} = %q but {%s } = %q", name, a, name, b)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	cases := []struct {
		tpl  string
		want string // a substring of the error
	}{
		// A typo in a lone placeholder is refused with its position.
		{"x{nwo_us}", `template "x{nwo_us}", character 2: unknown placeholder {nwo_us} (known: {now_us}`},
		// A typo in an expression names the variable and where it is.
		{"{floor(nwo_ms / window_ms)}", `template "{floor(nwo_ms / window_ms)}", character 8: unknown name nwo_ms (known: now_us, now_ms`},
		// A syntax error.
		{"x{limit +}", `template "x{limit +}", character 9: unexpected token EOF`},
		{"{a b}", `character 4: unexpected token Identifier("b")`},
		// Braced text that starts like a name but is no placeholder, which
		// was literal before expressions.
		{"{now_us2}", "unknown name now_us2"},
		// An expression that is never closed.
		{"{limit", `template "{limit", character 1: no closing } for this expression`},
		{`{key + "}`, "unterminated string in expression"},
		// Results that are not a number or a string.
		{"{limit > 1}", "{limit > 1} gives a bool; want a number or a string"},
		{"{split(key, \":\")}", "gives an array"},
		// A type error.
		{"{limit + key}", "invalid operation: + (mismatched types int64 and string)"},
		// The clock comes only from now_*.
		{"{now()}", "unknown name now"},
		// Slices are not supported (indexing is 1-based).
		{"{key[0:2]}", "slices (x[i:j]) are not supported"},
		// $env would hide which names are used (the clock).
		{"{key + $env.now_ms}", "$env is not supported"},
		// reply is a variable of predicates only.
		{"{reply}", "unknown placeholder {reply}"},
		// an expression that fails whatever the values fails here,
		// in the template's words, not as a raw Go run-time error on the
		// first call.
		{"{now_us % 0}", `template "{now_us % 0}", character 2: {now_us % 0} fails whatever the values: division by zero (an integer / or % by 0)`},
		{"{int(key) + 1}", "fails whatever the values"},
	}
	for i, c := range cases {
		_, err := custom.ParseTemplate(c.tpl)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d %q: got error %v, want one containing %q", i, c.tpl, err, c.want)
			continue
		}
		// A library error never speaks of command-line flags.
		if strings.Contains(err.Error(), "--") {
			t.Errorf("case %d %q: error mentions a flag: %v", i, c.tpl, err)
		}
	}
}

// An expression can fail when filled: Render says which, Fill gives "".
func TestTemplateRenderErrors(t *testing.T) {
	cases := []struct {
		tpl  string
		want string
	}{
		// Float division by zero: an infinite result.
		{"{limit / (cost - cost)}", `template "{limit / (cost - cost)}": {limit / (cost - cost)}: result is +Inf (a division by zero?)`},
		// Integer modulo by zero, for these values only (cost 2).
		{"a{limit % (cost - 2)}", `template "a{limit % (cost - 2)}": {limit % (cost - 2)}: division by zero (an integer / or % by 0)`},
		// Indexing past the end gives nil, which is no number or string.
		{`{split(key, ":")[3]}`, "result is nil"},
	}
	for i, c := range cases {
		tpl, err := custom.ParseTemplate(c.tpl)
		if err != nil {
			t.Fatalf("case %d %q: %v", i, c.tpl, err)
		}
		got, err := tpl.Render(vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d %q: got %q, %v; want an error containing %q", i, c.tpl, got, err, c.want)
		}
		if fill := tpl.Fill(vals); fill != "" {
			t.Errorf("case %d %q: Fill %q, want \"\"", i, c.tpl, fill)
		}
	}
}

func TestTemplateUses(t *testing.T) {
	cases := []struct {
		tpl   string
		uses  []string // exactly these Placeholders
		clock bool
	}{
		// Literal text uses nothing.
		{"[[10, 5]]", nil, false},
		// Lone placeholders.
		{"{now_us}", []string{"now_us"}, true},
		{"[[{window_s}, {limit}]]", []string{"window_s", "limit"}, false},
		// Names inside expressions count; function names do not.
		{"{floor(now_ms / window_ms)}", []string{"now_ms", "window_ms"}, true},
		{"{key}:{floor(now_s)}", []string{"key", "now_s"}, true},
		{"{limit / window_s}", []string{"limit", "window_s"}, false},
		// A name inside a string literal is not a use.
		{`{string("now_ms")}`, nil, false},
	}
	for i, c := range cases {
		tpl, err := custom.ParseTemplate(c.tpl)
		if err != nil {
			t.Fatalf("case %d %q: %v", i, c.tpl, err)
		}
		for _, name := range custom.Placeholders {
			want := false
			for _, u := range c.uses {
				want = want || u == name
			}
			if got := tpl.Uses(name); got != want {
				t.Errorf("case %d %q: Uses(%q) = %v, want %v", i, c.tpl, name, got, want)
			}
		}
		if got := tpl.UsesClock(); got != c.clock {
			t.Errorf("case %d %q: UsesClock() = %v, want %v", i, c.tpl, got, c.clock)
		}
	}
}

// One parsed Template filled from many goroutines (run with -race).
func TestTemplateConcurrentFill(t *testing.T) {
	tpl, err := custom.ParseTemplate("{key}:{floor(now_ms / window_ms)}:{limit / window_s}")
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
				v.Key = fmt.Sprintf("k%d", g)
				v.Now = vals.Now.Add(time.Duration(i) * time.Second)
				want := fmt.Sprintf("k%d:%d:6.666666666666667", g, (vals.Now.UnixMilli()+int64(i)*1000)/1500)
				if got := tpl.Fill(v); got != want {
					t.Errorf("goroutine %d step %d: got %q, want %q", g, i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func ExampleParseTemplate() {
	tpl, err := custom.ParseTemplate("{key}:{floor(now_ms / window_ms)}")
	if err != nil {
		fmt.Println(err)
		return
	}
	v := custom.Values{Key: "user:42", Now: time.UnixMilli(1767225600500), Window: time.Second}
	fmt.Println(tpl.Fill(v), tpl.UsesClock())

	rate, _ := custom.ParseTemplate("[[{window_s}, {limit / window_s}]]")
	fmt.Println(rate.Fill(custom.Values{Window: 2 * time.Second, Limit: 10}))

	_, err = custom.ParseTemplate("{floor(nwo_ms / window_ms)}")
	fmt.Println(err)
	// Output:
	// user:42:1767225600 true
	// [[2, 5]]
	// template "{floor(nwo_ms / window_ms)}", character 8: unknown name nwo_ms (known: now_us, now_ms, now_s, window_us, window_ms, window_s, limit, cost, request_id, key)
}

// Fill of a template of lone placeholders (the fast path) and of
// expressions.
func BenchmarkTemplateFill(b *testing.B) {
	for _, src := range []string{
		"{now_us}",
		"[[{window_s}, {limit}]]",
		"{floor(now_ms / window_ms)}",
		"{key}:{floor(now_ms / window_ms) - 1}",
		"{limit / window_s}",
	} {
		tpl, err := custom.ParseTemplate(src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = tpl.Fill(vals)
			}
		})
	}
}
