package scenarios

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestBuiltinYAMLMatchesGo proves each shipped scenario file builds exactly
// the Schedule of its Go built-in: same Params, same arrivals in the same
// order, for several seeds and limit/window overrides.
func TestBuiltinYAMLMatchesGo(t *testing.T) {
	params := []Params{
		{},                   // the scenario's defaults
		{Seed: 1},            // another seed
		{Seed: -7, Limit: 3}, // tiny limit: steady without jitter
		{Seed: 42, Limit: 2}, // L < 3
		{Seed: 9, Limit: 7, Window: time.Second},
		{Seed: 123456789, Limit: 100, Window: 1500 * time.Millisecond},
		{Seed: 5, Limit: 1, Window: 24 * time.Hour},
		{Seed: 3, Limit: 250, Window: time.Hour},
		{Seed: 11, Limit: 80, Window: 7 * time.Millisecond},
	}
	for _, name := range Names() {
		data, err := BuiltinYAML(name)
		if err != nil {
			t.Fatalf("BuiltinYAML(%q): %v", name, err)
		}
		file, err := ParseScenario(data, "")
		if err != nil {
			t.Fatalf("ParseScenario(%s): %v", name, err)
		}
		goSc, _ := Get(name)
		if file.Name != name || file.Defaults != goSc.Defaults || file.Description != goSc.Description {
			t.Errorf("%s: file Name %q Defaults %+v Description %q; Go %q %+v %q",
				name, file.Name, file.Defaults, file.Description, goSc.Name, goSc.Defaults, goSc.Description)
		}
		for _, p := range params {
			want := goSc.Build(p)
			got, err := file.Make(p)
			if err != nil {
				t.Errorf("%s %+v: Make: %v", name, p, err)
				continue
			}
			if got.Scenario != want.Scenario || got.Params != want.Params {
				t.Errorf("%s %+v: got %q %+v, want %q %+v", name, p, got.Scenario, got.Params, want.Scenario, want.Params)
			}
			if !reflect.DeepEqual(got.Arrivals, want.Arrivals) {
				t.Errorf("%s %+v: %d arrivals differ from the Go built-in's %d (first difference at %d)",
					name, p, len(got.Arrivals), len(want.Arrivals), firstDiff(got.Arrivals, want.Arrivals))
			}
		}
	}
}

func firstDiff(a, b []Arrival) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestBuiltinYAMLUnknown(t *testing.T) {
	if _, err := BuiltinYAML("nope"); err == nil || !strings.Contains(err.Error(), "boundary-burst") {
		t.Errorf("BuiltinYAML(nope) = %v, want an error listing the known names", err)
	}
}

// TestParseScenarioErrors checks that each mistake is reported with the
// field path and the line.
func TestParseScenarioErrors(t *testing.T) {
	const head = "name: t\nlimit: 10\nwindow: 1s\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"empty file", "", "scenario file is empty"},
		{"not a mapping", "- 1\n", "must be a mapping (line 1)"},
		{"unknown top field", head + "windows: 2\npatterns: [{kind: burst, at: 0, count: 1}]\n", "windows: unknown field"},
		{"missing limit", "name: t\nwindow: 1s\npatterns: [{kind: burst, at: 0, count: 1}]\n", "limit: missing"},
		{"bad limit", "name: t\nlimit: 0\nwindow: 1s\npatterns: [{kind: burst, at: 0, count: 1}]\n", "limit: must be an integer >= 1, got \"0\" (line 2)"},
		{"bad window", "name: t\nlimit: 1\nwindow: 10\npatterns: [{kind: burst, at: 0, count: 1}]\n", "window: must be a duration > 0 such as 10s, got \"10\" (line 3)"},
		{"no patterns", head, "patterns: missing"},
		{"empty patterns", head + "patterns: []\n", "patterns: must be a non-empty list (line 4)"},
		{"unknown kind", head + "patterns:\n  - kind: bursts\n", "patterns[0].kind: unknown kind \"bursts\""},
		{"unknown pattern field", head + "patterns:\n  - kind: burst\n    at: 0\n    count: 1\n    span: 1s\n", "patterns[0].span: unknown field (known: kind, key, client, clients, at, count, step, cost, jitter) (line 8)"},
		{"missing required", head + "patterns:\n  - kind: random\n    count: 1\n", "patterns[0].span: missing"},
		{"count zero", head + "patterns:\n  - kind: burst\n    at: 0\n    count: 1\n  - kind: burst\n    at: 0\n    count: L - 10\n", "patterns[1].count: must be >= 1, got 0 (line 10)"},
		{"syntax", head + "patterns:\n  - kind: burst\n    at: -W/\n    count: 1\n", "patterns[0].at: unexpected token EOF at column 3 (line 6)"},
		{"unknown name", head + "patterns:\n  - kind: burst\n    at: X\n    count: 1\n", "patterns[0].at: unknown name X at column 1 (known: L, W) (line 6)"},
		{"kind mismatch", head + "patterns:\n  - kind: burst\n    at: W + 1\n    count: 1\n", "patterns[0].at: 1s + 1: cannot combine a duration and a number (line 6)"},
		{"number for duration", head + "patterns:\n  - kind: burst\n    at: 5\n    count: 1\n", "patterns[0].at: want a duration, got the number 5 (line 6)"},
		{"duration for number", head + "patterns:\n  - kind: burst\n    at: 0\n    count: W\n", "patterns[0].count: want a number, got the duration 1s (line 7)"},
		{"division by zero", head + "vars:\n  z: L/(L-10)\npatterns:\n  - kind: burst\n    at: 0\n    count: 1\n", "vars.z: 10 / 0: division by zero (line 5)"},
		{"cost above limit", head + "patterns:\n  - kind: burst\n    at: 0\n    count: 1\n    cost: L+1\n", "patterns[0].cost: cost 11 is above the limit 10 (line 8)"},
		{"unknown key", head + "keys: [a, b]\npatterns:\n  - kind: burst\n    key: c\n    at: 0\n    count: 1\n", "patterns[0].key: \"c\" is not one of keys (a, b) (line 7)"},
		{"duplicate field", head + "patterns:\n  - kind: burst\n    at: 0\n    at: 1s\n    count: 1\n", "patterns[0].at: "},
		{"cron request field", head + "patterns:\n  - kind: cron\n    every: W\n    runs: 1\n    requests:\n      - {cost: 1, size: 2}\n", "patterns[0].requests[0].size: unknown field"},
		{"cron request count", head + "patterns:\n  - kind: cron\n    every: W\n    runs: 1\n    requests:\n      - {count: 0}\n", "patterns[0].requests[0].count: must be >= 1, got 0 (line 9)"},
		{"too many arrivals", head + "patterns:\n  - kind: burst\n    at: 0\n    count: 1000000\n    clients: 1000\n", "more than 10000000 arrivals"},
		{"bad var name", head + "vars:\n  L: 2\npatterns: [{kind: burst, at: 0, count: 1}]\n", "vars.L: bad name"},
		{"var named as an operator", head + "vars:\n  and: 2\npatterns: [{kind: burst, at: 0, count: 1}]\n", "vars.and: bad name"},
		{"var used before it is set", head + "vars:\n  a: b\n  b: 1\npatterns: [{kind: burst, at: 0, count: 1}]\n", "vars.a: unknown name b at column 1 (known: L, W) (line 5)"},
		{"client outside client_offset", head + "patterns:\n  - kind: burst\n    at: 0\n    count: client\n", "patterns[0].count: unknown name client"},
		{"unknown name in an unused branch", head + "patterns:\n  - kind: burst\n    at: 0\n    count: if(L > 5, 1, X)\n", "patterns[0].count: unknown name X at column 14"},
		{"deep nesting", head + "patterns:\n  - kind: burst\n    at: 0\n    count: " + strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200) + "\n", "nested deeper than 64"},
	}
	for _, c := range cases {
		_, err := ParseScenario([]byte(c.yaml), "t")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestScenarioFileCheck: a file valid for its own limit may fail for
// another; Make says so and Build panics.
func TestScenarioFileCheck(t *testing.T) {
	sc, err := ParseScenario([]byte("name: c\nlimit: 100\nwindow: 1s\npatterns:\n  - kind: burst\n    at: 0\n    count: 1\n    cost: 50\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Make(Params{Limit: 10}); err == nil || !strings.Contains(err.Error(), "scenario c: patterns[0].cost: cost 50 is above the limit 10 (line 8)") {
		t.Errorf("Make(limit 10) = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Build(limit 10) did not panic")
		}
	}()
	sc.Build(Params{Limit: 10})
}

// TestScenarioFileKinds builds a small file of every kind by hand.
func TestScenarioFileKinds(t *testing.T) {
	const ms = time.Millisecond
	src := `
name: kinds
limit: 10
window: 100ms
keys: [a, b]
patterns:
  - kind: burst        # 2 clients x 2 arrivals
    at: -1ms
    count: 2
    step: 1ms
    clients: 2
    client: 3
    cost: 2
  - kind: steady       # 2 periods x 2
    key: b
    start: 10ms
    count: 2
    period: 50ms
    periods: 2
  - kind: cron         # 2 runs x 2 clients x (1 + 2)
    key: b
    start: 0
    every: W
    runs: 2
    clients: 2
    client_offset: client*5ms
    requests:
      - cost: L
      - {offset: 1ms, count: 2, step: 1ms}
`
	sc, err := ParseScenario([]byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Make(Params{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Arrival{
		{-ms, "a", 2, 3}, {-ms, "a", 2, 4}, {0, "a", 2, 3}, {0, "a", 2, 4},
		{0, "b", 10, 0}, {ms, "b", 1, 0}, {2 * ms, "b", 1, 0},
		{5 * ms, "b", 10, 1}, {6 * ms, "b", 1, 1}, {7 * ms, "b", 1, 1},
		{10 * ms, "b", 1, 0}, {35 * ms, "b", 1, 0}, {60 * ms, "b", 1, 0}, {85 * ms, "b", 1, 0},
		{100 * ms, "b", 10, 0}, {101 * ms, "b", 1, 0}, {102 * ms, "b", 1, 0},
		{105 * ms, "b", 10, 1}, {106 * ms, "b", 1, 1}, {107 * ms, "b", 1, 1},
	}
	if !reflect.DeepEqual(s.Arrivals, want) {
		t.Errorf("arrivals:\n got %v\nwant %v", s.Arrivals, want)
	}
	checkInvariants(t, "kinds", Params{Limit: 10, Window: 100 * ms}, s)
}

// TestScenarioFileExprNames: vars may be named as expr's if, else and the
// functions; a call still calls the function.
func TestScenarioFileExprNames(t *testing.T) {
	sc, err := ParseScenario([]byte("name: t\nlimit: 10\nwindow: 1s\nvars:\n  if: 2\n  else: 3\n  min: 4\n  max: W/2\n"+
		"patterns:\n  - kind: burst\n    at: max\n    count: >-\n      if + else + min\n      + min(if, else)\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Make(Params{})
	if err != nil || len(s.Arrivals) != 11 || s.Arrivals[0].At != 500*time.Millisecond {
		t.Errorf("got %d arrivals from %v, %v; want 11 at 500ms", len(s.Arrivals), s.Arrivals[0].At, err)
	}
}

func TestExpr(t *testing.T) {
	env := map[string]any{"L": int64(50), "W": 10 * time.Second, "big": true}
	names := []string{"L", "W", "big"}
	cases := []struct {
		src  string
		want value
	}{
		{"-W/10", value{int64(-time.Second), duration}},
		{"min(1ms, W/(20*L))", value{int64(time.Millisecond), duration}},
		{"W/1ms", value{10000, number}},
		{"7 % 3 + 2*-3", value{-5, number}},
		{"if(L < 3, 0, W/4)", value{int64(2500 * time.Millisecond), duration}},
		{"if(L >= 3, 1, 1/0)", value{1, number}},
		{"max(1, L/2, 3)", value{25, number}},
		{"1.5s + 10us + 3µs", value{int64(1500*time.Millisecond + 13*time.Microsecond), duration}},
		{"(L == 50) + (L != 50) + (L <= 49) + (L > 49)", value{2, number}},
		// expr's own operators, on bools
		{"L > 10 && L < 100 ? W : 0", value{int64(10 * time.Second), duration}},
		{"big || 1/0 == 1", value{1, number}},
		{"let half = W/2; half + half", value{int64(10 * time.Second), duration}},
		{"if(big, 1, 2)", value{1, number}},
		{"L && !(L - 50) ? 1 : 2", value{1, number}},
		{"1 < L < 50", value{0, number}},
		{"10_000 + 0x10", value{10016, number}},
	}
	for _, c := range cases {
		prog, err := compileExpr(c.src, names)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		_, got, err := runExpr(prog, env)
		if err != nil || got != c.want {
			t.Errorf("%q = %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}

// TestExprErrors: what the old parser refused at parse or evaluation time,
// and what the expr language refuses, with the column where it can.
func TestExprErrors(t *testing.T) {
	env := map[string]any{"L": int64(50), "W": 10 * time.Second}
	names := []string{"L", "W"}
	cases := []struct{ src, want string }{
		{"", "empty expression"},
		{"-W/", "unexpected token EOF at column 3"},
		{"W + X", "unknown name X at column 5 (known: L, W)"},
		{"foo(1)", `unknown function "foo" (known: min, max, if) at column 1`},
		{"if(1, 2)", "if takes 3 arguments (condition, then, else), got 2 at column 1"},
		{"max()", "max needs at least 1 argument at column 1"},
		{"10 + 1x", `bad number syntax: "1x" at column 7`},
		{"W//2", "// at column 2: comments are not part of scenario expressions"},
		{"W.Hours()", "W.Hours: member access is not part of scenario expressions at column 3"},
		{`"10s"`, `"10s" is not part of scenario expressions (integers, durations, names, operators, min, max and if) at column 1`},
		{"L * 1.5", "1.5: scenario arithmetic is on integers (a duration is written with its unit: 1.5s) at column 5"},
		{"W + 1", "10s + 1: cannot combine a duration and a number"},
		{"L / (L - 50)", "50 / 0: division by zero"},
		{"if(W, 1, 2)", "if: the condition must be a number, got the duration 10s"},
		{"min(1, W, 1/0)", "min: cannot compare a number and a duration"},
		{"L ** 2", "the operator ** is not part of scenario expressions at column 3"},
		{"$env", "unexpected $ at column 1"},
		{"if(L > 3, [1], 1)", "[1] is not part"},
		{"W && 1", "&&: want a bool or a number, got the duration 10s"},
		{strings.Repeat("(", 64) + "1" + strings.Repeat(")", 64), "expression nested deeper than 64"},
		{strings.Repeat("-", 64) + "1", "expression nested deeper than 64"},
	}
	for _, c := range cases {
		prog, err := compileExpr(c.src, names)
		if err == nil {
			_, _, err = runExpr(prog, env)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got error %v, want one containing %q", c.src, err, c.want)
		}
	}
}

// FuzzParseScenario: no input makes the loader panic or hang, and a file
// that loads builds its defaults without panicking.
func FuzzParseScenario(f *testing.F) {
	for _, name := range Names() {
		data, _ := BuiltinYAML(name)
		f.Add(data)
	}
	f.Add([]byte("name: t\nlimit: 10\nwindow: 1s\npatterns: [{kind: burst, at: -W, count: L, step: 1ms}]\n"))
	f.Add([]byte("name: t\nlimit: 1\nwindow: 1ns\npatterns: [{kind: random, span: W, count: 3, clients: 2}]\n"))
	f.Add([]byte("{{{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data, "fuzz")
		if err != nil {
			return
		}
		s, err := sc.Make(Params{})
		if err != nil {
			t.Fatalf("loaded but cannot build its defaults: %v", err)
		}
		if len(s.Arrivals) > MaxFileArrivals {
			t.Fatalf("%d arrivals", len(s.Arrivals))
		}
	})
}
