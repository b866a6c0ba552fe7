package targets_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/targets"
)

// Load names the field of every bad input after Given's fields, never a
// command-line flag, and builds nothing it cannot check.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	script := write("mine.lua", "return 1\n")
	algo := write("algo.yaml", "algorithm: sliding-log\n")
	lib := write("two.lua", "#!lua name=two\nredis.register_function('f', function() return 1 end)\nredis.register_function{function_name = 'g', callback = function() return 1 end}\n")
	cases := []struct {
		name  string
		given targets.Given
		field string // "" for a *targets.SpecError
		want  string
	}{
		{"bad predicate", targets.Given{Scripts: []string{script}, Allowed: "reply =="}, "allowed", "predicate"},
		{"missing script", targets.Given{Scripts: []string{filepath.Join(dir, "nope.lua")}}, "scripts", "nope.lua"},
		{"missing file", targets.Given{Files: []string{filepath.Join(dir, "nope.yaml")}}, "files", "nope.yaml"},
		{"algorithm beside built-ins", targets.Given{Files: []string{algo}, BesideBuiltins: true}, "files", "only a script or an exec adapter can stand beside the built-ins"},
		{"built-in's name", targets.Given{Scripts: []string{write("sliding-log", "return 1\n")}, BesideBuiltins: true}, "targets", "built-in algorithm's name"},
		{"same name twice", targets.Given{Scripts: []string{script, script}, BesideBuiltins: true}, "targets", "two targets are named"},
		{"bad key template", targets.Given{Scripts: []string{script}, Keys: []string{"other:{key}"}}, "", "must start with {key}"},
		// Validate's rules on how the fields combine
		{"unknown algorithm", targets.Given{Algorithm: "leaky"}, "algorithm", `unknown algorithm "leaky"`},
		{"args without a script", targets.Given{Algorithm: "sliding-log", Args: []string{"{now_us}"}}, "args", "goes only with a script"},
		{"allowed_when without a script", targets.Given{Files: []string{algo}, AllowedWhen: new(int64)}, "allowed_when", "goes only with a script"},
		{"allowed and allowed_when", targets.Given{Scripts: []string{script}, Allowed: "reply == 1", AllowedWhen: new(int64)}, "allowed", "not both"},
		// function libraries: named as such, their functions listed
		{"library as a script", targets.Given{Scripts: []string{lib}}, "scripts", "two.lua is a function library (#!lua name=two) for FUNCTION LOAD and FCALL, not a script for EVAL: give it as a function with the function to call; it registers: f, g"},
		{"script as a function", targets.Given{Function: script}, "function", "mine.lua is not a function library"},
		{"several functions", targets.Given{Function: lib}, "fcall", "two.lua registers 2 functions (f, g): name the one to call"},
		{"unknown function", targets.Given{Function: lib, FCall: "h"}, "fcall", `two.lua registers no function "h" (it registers: f, g)`},
		{"fcall without a function", targets.Given{Scripts: []string{script}, FCall: "f"}, "fcall", "goes only with a function library"},
		{"setup with a function", targets.Given{Function: lib, FCall: "f", Setup: script}, "setup", "goes only with a script"},
		{"exec and a script", targets.Given{Scripts: []string{script}, Exec: "python3 adapter.py"}, "exec", "a script, not both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := targets.Load(c.given)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "--") {
				t.Fatalf("got %v, want an error saying %q and no flag", err, c.want)
			}
			if c.field == "" {
				if _, ok := err.(*targets.SpecError); !ok {
					t.Errorf("got %T, want a *targets.SpecError", err)
				}
				return
			}
			if name, _ := field.Name(err); name != c.field {
				t.Errorf("field %q, want %q", name, c.field)
			}
		})
	}
}

// Load keeps the order scripts, then files, and a script's target carries
// its digest.
func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	script, other, file := filepath.Join(dir, "mine.lua"), filepath.Join(dir, "other.lua"), filepath.Join(dir, "other.yaml")
	for p, text := range map[string]string{script: "return 1\n", other: "return 2\n", file: "script: other.lua\n"} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	specs, err := targets.Load(targets.Given{Scripts: []string{script}, Files: []string{file}, BesideBuiltins: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "mine.lua" || specs[1].From != file {
		t.Fatalf("specs %+v", specs)
	}
	ts := targets.Targets(specs)
	if d := targets.Digests(ts); len(d) != 64+1+64 || ts[0].SHA256 == ts[1].SHA256 {
		t.Errorf("digests %q: want two SHA-256s", d)
	}
}
