package scenarios

import (
	"embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"

	"github.com/ratelab/ratelab/internal/input"
)

// Scenario files describe a schedule in YAML; see ParseScenario for the
// schema. The four built-in scenarios are shipped as scenario files too
// (BuiltinYAML), and a test proves each builds the same Schedule as its Go
// version.

//go:embed builtin/*.yaml
var builtinFS embed.FS

// MaxFileArrivals is the most arrivals a scenario file may build for one
// Params; a file (or a limit) asking for more is an error, not an
// out-of-memory.
const MaxFileArrivals = 10_000_000

// BuiltinYAML returns the scenario file of the named built-in scenario
// (boundary-burst, steady, overload, cron-regions): a starting point for a
// user's own. An unknown name returns an error listing the known names.
func BuiltinYAML(name string) ([]byte, error) {
	if _, err := Get(name); err != nil {
		return nil, err
	}
	return builtinFS.ReadFile("builtin/" + name + ".yaml")
}

// LoadScenarioFile reads and parses the scenario file at path (see
// ParseScenario). The file's base name without its extension is the
// scenario's name unless the file sets one. Path "-" (StdinPath) reads
// standard input, named "stdin" unless the file sets a name. Errors start
// with the path.
func LoadScenarioFile(path string) (Scenario, error) {
	var data []byte
	var err error
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if path == StdinPath {
		// bounded as a file is: a stream that never ends is refused
		data, err = io.ReadAll(io.LimitReader(os.Stdin, input.MaxText+1))
		if err == nil && int64(len(data)) > input.MaxText {
			err = fmt.Errorf("stdin: %w (%s)", input.ErrTooLarge, input.Bytes(input.MaxText))
		}
		base = "stdin"
	} else {
		data, err = input.ReadFile(path, input.MaxText)
	}
	if err != nil {
		return Scenario{}, err // names path (input.ReadFile, os.PathError)
	}
	sc, err := ParseScenario(data, base)
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario parses a scenario file and returns a Scenario that builds
// its Schedule like the built-ins do. name is used when the file has no
// name field. The schema (unknown fields are errors):
//
//	name: my-scenario          # optional; a string
//	description: one line      # optional
//	limit: 50                  # required: the default Limit, >= 1
//	window: 10s                # required: the default Window, a Go duration > 0
//	seed: 0                    # optional: added to Params.Seed before seeding the RNG
//	keys: [user, other]        # optional: the keys patterns may use; default [user]
//	vars:                      # optional: named expressions, in order, each may use earlier ones
//	  step: min(1ms, W/(20*L))
//	patterns:                  # required: at least one
//	  - kind: burst            # count arrivals from at, step apart
//	    at: -W/10              # duration from the anchor (the window boundary)
//	    count: L
//	    step: step             # default 0: all at one instant
//	  - kind: steady           # periods x count arrivals: start + p*period + k*step
//	    count: L/2             # per period
//	    period: W              # default W
//	    periods: 5             # default 1
//	    step: W/(L/2)          # default period/count
//	  - kind: random           # count arrivals at start + a uniform draw in [0, span)
//	    span: 5*W
//	    count: 15*L
//	  - kind: cron             # runs x clients jobs; job (k, c) starts at start + k*every + client_offset
//	    start: -W/2
//	    every: W/24
//	    runs: 24
//	    clients: 8
//	    client_offset: (W/24)*(7*client)/60   # may use client = 0..clients-1
//	    requests:              # each job sends these, in order
//	      - {cost: min(100, L)}
//	      - {offset: W/24/1800, count: 20, step: W/24/1800}
//
// Fields of every kind: key (one of keys; default the first), client (the
// first client's number, default 0) and clients (default 1: each of the
// clients sends the whole pattern; arrivals are numbered client..client+clients-1).
// burst, steady and random take cost (default 1); burst and steady take
// jitter (a duration: when > 0 each arrival is delayed by a uniform draw in
// [0, jitter)); burst places its first arrival with at, steady, random and
// cron with start (default 0); cron's requests take offset, count, step and
// cost.
//
// Every number and duration is an expression in expr
// (https://expr-lang.org, the language of templates and reply predicates)
// over L (the limit, a number), W (the window, a duration), vars and (in
// client_offset) client, with integer and duration arithmetic:
//
//   - numbers are integers (int64, also written 1_000 or 0x10), with Go's
//     truncating division; durations are written as Go durations ("1ms",
//     "1.5s", "10us", "10µs"); + - * / % and unary -, parentheses.
//   - A number and a duration never mix: W/2 is a duration, W/1ms a number,
//     W*2 a duration, W+1 an error; a bare 0 is accepted where a duration is
//     wanted. Overflow wraps; a division by zero is an error.
//   - Comparisons (< <= > >= == !=) take one kind and give a bool, which
//     counts as 1 or 0 in arithmetic and as a field's number; 1 < L < 100
//     means 1 < L && L < 100, as in expr.
//   - A condition, of if(cond, then, else), cond ? then : else, &&, ||, !
//     (also and, or, not), is a bool or a number (non-zero is true). if and
//     ?: evaluate only the chosen branch, && and || only what decides.
//   - min(a, ...) and max(a, ...) of one kind; let x = ...; ... names a value.
//
// Nothing else of expr is: no fractions (1.5), strings, arrays, member
// access, comments (W//2 is an error, not W) or builtin functions. Unknown
// names and functions and a wrong number of arguments are errors when the
// file is loaded, in every branch; a kind mismatch or a division by zero
// when the branch is evaluated.
//
// Random draws come from one PCG seeded with Params.Seed + seed, drawn in
// pattern order (for each client, each arrival: its jitter, or its random
// time), so the same file and Params give the same Schedule. Arrivals are
// made in pattern order and sorted stably by time.
//
// Errors name the field path and the line, e.g.
// "patterns[2].count: must be >= 1, got 0 (line 14)". The file is checked
// by building it with its own limit and window; other Params may still fail
// (a cost above a smaller limit, say): Scenario.Check says so before Build.
func ParseScenario(data []byte, name string) (Scenario, error) {
	f, err := parseScenarioFile(data, name)
	if err != nil {
		return Scenario{}, err
	}
	if _, err := f.plan(f.defaults); err != nil {
		return Scenario{}, fmt.Errorf("with its own limit %d and window %s: %w", f.defaults.Limit, f.defaults.Window, err)
	}
	return Scenario{
		Name:        f.name,
		Description: f.description,
		Defaults:    f.defaults,
		Build: func(p Params) Schedule {
			s, err := f.build(p)
			if err != nil {
				panic(fmt.Sprintf("scenarios: %s: Build called with Params that Check rejects: %v", f.name, err))
			}
			return s
		},
		Check: func(p Params) error {
			_, err := f.plan(withDefaults(p, f.defaults))
			return err
		},
	}, nil
}

// scenarioFile is a parsed scenario file: expressions parsed, not evaluated.
type scenarioFile struct {
	name, description string
	defaults          Params
	seed              int64
	keys              []string
	vars              []*field
	patterns          []*pattern
}

// field is one expression-valued field: its path and line for errors.
type field struct {
	path string
	line int
	name string      // the var name for vars
	prog *vm.Program // nil for a cron request's placeholder
}

type pattern struct {
	kind     string
	path     string
	line     int
	key      string
	fields   map[string]*field // by field name
	requests []map[string]*field
}

// fileErr is an error about one place of a scenario file.
func fileErr(path string, line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path == "" {
		return fmt.Errorf("%s (line %d)", msg, line)
	}
	return fmt.Errorf("%s: %s (line %d)", path, msg, line)
}

// Fields each pattern kind accepts (besides kind); requestFields are those
// of a cron request.
var (
	commonFields  = []string{"key", "client", "clients"}
	patternFields = map[string][]string{
		"burst":  {"at", "count", "step", "cost", "jitter"},
		"steady": {"start", "count", "period", "periods", "step", "cost", "jitter"},
		"random": {"start", "span", "count", "cost"},
		"cron":   {"start", "every", "runs", "client_offset", "requests"},
	}
	requiredFields = map[string][]string{
		"burst":  {"at", "count"},
		"steady": {"count"},
		"random": {"span", "count"},
		"cron":   {"every", "runs", "requests"},
	}
	requestFields = []string{"offset", "count", "step", "cost"}
	topFields     = []string{"name", "description", "limit", "window", "seed", "keys", "vars", "patterns"}
)

// mappingPairs checks that n is a mapping with only allowed, unique keys and
// returns its values by key.
func mappingPairs(n *yaml.Node, path string, allowed []string) (map[string]*yaml.Node, []string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, nil, fileErr(path, n.Line, "must be a mapping")
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	var order []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := joinPath(path, k.Value)
		if allowed != nil && !contains(allowed, k.Value) {
			return nil, nil, fileErr(sub, k.Line, "unknown field (known: %s)", strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, nil, fileErr(sub, k.Line, "given twice")
		}
		out[k.Value] = v
		order = append(order, k.Value)
	}
	return out, order, nil
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scalar returns n's text, or an error if n is not a scalar.
func scalar(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fileErr(path, n.Line, "must be a single value")
	}
	return n.Value, nil
}

// exprField compiles n as an expression over names.
func exprField(n *yaml.Node, path string, names []string) (*field, error) {
	s, err := scalar(n, path)
	if err != nil {
		return nil, err
	}
	prog, err := compileExpr(s, names)
	if err != nil {
		return nil, fileErr(path, n.Line, "%v", err)
	}
	return &field{path: path, line: n.Line, prog: prog}, nil
}

func parseScenarioFile(data []byte, name string) (*scenarioFile, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("scenario file: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("scenario file is empty")
	}
	top, _, err := mappingPairs(doc.Content[0], "", topFields)
	if err != nil {
		return nil, err
	}
	f := &scenarioFile{name: name, keys: []string{UserKey}}
	if n := top["name"]; n != nil {
		if f.name, err = scalar(n, "name"); err != nil {
			return nil, err
		}
	}
	if f.name == "" {
		return nil, fileErr("name", doc.Content[0].Line, "missing: the file needs a name")
	}
	if n := top["description"]; n != nil {
		if f.description, err = scalar(n, "description"); err != nil {
			return nil, err
		}
	}
	n := top["limit"]
	if n == nil {
		return nil, fileErr("limit", doc.Content[0].Line, "missing: the default limit (cost units per window) is required")
	}
	s, err := scalar(n, "limit")
	if err != nil {
		return nil, err
	}
	if f.defaults.Limit, err = strconv.ParseInt(s, 10, 64); err != nil || f.defaults.Limit < 1 {
		return nil, fileErr("limit", n.Line, "must be an integer >= 1, got %q", s)
	}
	if n = top["window"]; n == nil {
		return nil, fileErr("window", doc.Content[0].Line, "missing: the default window (a duration such as 10s) is required")
	}
	if s, err = scalar(n, "window"); err != nil {
		return nil, err
	}
	if f.defaults.Window, err = time.ParseDuration(s); err != nil || f.defaults.Window <= 0 {
		return nil, fileErr("window", n.Line, "must be a duration > 0 such as 10s, got %q", s)
	}
	if n = top["seed"]; n != nil {
		if s, err = scalar(n, "seed"); err != nil {
			return nil, err
		}
		if f.seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, fileErr("seed", n.Line, "must be an integer, got %q", s)
		}
	}
	if n = top["keys"]; n != nil {
		if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			return nil, fileErr("keys", n.Line, "must be a non-empty list of key names")
		}
		f.keys = nil
		for i, k := range n.Content {
			p := fmt.Sprintf("keys[%d]", i)
			if s, err = scalar(k, p); err != nil {
				return nil, err
			}
			if s == "" {
				return nil, fileErr(p, k.Line, "must not be empty")
			}
			if contains(f.keys, s) {
				return nil, fileErr(p, k.Line, "%q is listed twice", s)
			}
			f.keys = append(f.keys, s)
		}
	}
	if n = top["vars"]; n != nil {
		vals, order, err := mappingPairs(n, "vars", nil)
		if err != nil {
			return nil, err
		}
		for _, name := range order {
			p := "vars." + name
			if !validName(name) || name == "L" || name == "W" || name == "client" || contains(reservedNames, name) {
				return nil, fileErr(p, vals[name].Line, "bad name: want letters, digits and _, not starting with a digit, and not L, W, client or a word of the language (%s)", strings.Join(reservedNames, ", "))
			}
			fl, err := exprField(vals[name], p, f.names(false))
			if err != nil {
				return nil, err
			}
			fl.name = name
			f.vars = append(f.vars, fl)
		}
	}
	if n = top["patterns"]; n == nil {
		return nil, fileErr("patterns", doc.Content[0].Line, "missing: at least one pattern is required")
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, fileErr("patterns", n.Line, "must be a non-empty list")
	}
	for i, pn := range n.Content {
		pt, err := f.parsePattern(pn, fmt.Sprintf("patterns[%d]", i))
		if err != nil {
			return nil, err
		}
		f.patterns = append(f.patterns, pt)
	}
	return f, nil
}

// reservedNames are the words of expr that cannot name a var.
var reservedNames = []string{"and", "or", "not", "in", "matches", "contains", "startsWith", "endsWith", "let", "true", "false", "nil"}

// names returns the names an expression may use: L, W, the vars parsed so
// far, and client if withClient (client_offset).
func (f *scenarioFile) names(withClient bool) []string {
	names := []string{"L", "W"}
	if withClient {
		names = append(names, "client")
	}
	for _, v := range f.vars {
		names = append(names, v.name)
	}
	return names
}

func validName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

func (f *scenarioFile) parsePattern(n *yaml.Node, path string) (*pattern, error) {
	pairs, _, err := mappingPairs(n, path, nil)
	if err != nil {
		return nil, err
	}
	kn := pairs["kind"]
	if kn == nil {
		return nil, fileErr(path+".kind", n.Line, "missing (one of burst, steady, random, cron)")
	}
	kind, err := scalar(kn, path+".kind")
	if err != nil {
		return nil, err
	}
	own, ok := patternFields[kind]
	if !ok {
		return nil, fileErr(path+".kind", kn.Line, "unknown kind %q (known: burst, steady, random, cron)", kind)
	}
	allowed := append(append([]string{"kind"}, commonFields...), own...)
	if _, _, err := mappingPairs(n, path, allowed); err != nil {
		return nil, err
	}
	pt := &pattern{kind: kind, path: path, line: n.Line, key: f.keys[0], fields: map[string]*field{}}
	for _, req := range requiredFields[kind] {
		if pairs[req] == nil {
			return nil, fileErr(path+"."+req, n.Line, "missing: a %s pattern needs %s", kind, strings.Join(requiredFields[kind], ", "))
		}
	}
	for k, v := range pairs {
		p := path + "." + k
		switch k {
		case "kind":
		case "key":
			s, err := scalar(v, p)
			if err != nil {
				return nil, err
			}
			if !contains(f.keys, s) {
				return nil, fileErr(p, v.Line, "%q is not one of keys (%s)", s, strings.Join(f.keys, ", "))
			}
			pt.key = s
		case "requests":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return nil, fileErr(p, v.Line, "must be a non-empty list")
			}
			for i, rn := range v.Content {
				rp := fmt.Sprintf("%s[%d]", p, i)
				rpairs, _, err := mappingPairs(rn, rp, requestFields)
				if err != nil {
					return nil, err
				}
				req := map[string]*field{}
				for rk, rv := range rpairs {
					if req[rk], err = exprField(rv, rp+"."+rk, f.names(false)); err != nil {
						return nil, err
					}
				}
				// A request with no fields is one arrival of cost 1 at the job's start.
				req[""] = &field{path: rp, line: rn.Line}
				pt.requests = append(pt.requests, req)
			}
		default:
			fl, err := exprField(v, p, f.names(k == "client_offset"))
			if err != nil {
				return nil, err
			}
			pt.fields[k] = fl
		}
	}
	return pt, nil
}
