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
	cases := []struct {
		name  string
		given targets.Given
		field string // "" for a *targets.SpecError
		want  string
	}{
		{"bad predicate", targets.Given{Scripts: []string{script}, Allowed: "reply =="}, "allowed", "predicate"},
		{"missing script", targets.Given{Scripts: []string{filepath.Join(dir, "nope.lua")}}, "scripts", "nope.lua"},
		{"missing file", targets.Given{Files: []string{filepath.Join(dir, "nope.yaml")}}, "files", "nope.yaml"},
		{"algorithm beside built-ins", targets.Given{Files: []string{algo}, BesideBuiltins: true}, "files", "only a script can stand beside the built-ins"},
		{"built-in's name", targets.Given{Scripts: []string{write("sliding-log", "return 1\n")}, BesideBuiltins: true}, "targets", "built-in algorithm's name"},
		{"same name twice", targets.Given{Scripts: []string{script, script}, BesideBuiltins: true}, "targets", "two targets are named"},
		{"bad key template", targets.Given{Scripts: []string{script}, Keys: []string{"other:{key}"}, AllowedWhen: 1}, "", "must start with {key}"},
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

// Load keeps the order scripts, files, then the one algorithm or endpoint,
// and a script's target carries its digest.
func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "mine.lua")
	if err := os.WriteFile(script, []byte("return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	specs, err := targets.Load(targets.Given{Scripts: []string{script}, Algorithm: "sliding-log", AllowedWhen: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "mine.lua" || specs[1].Algorithm != "sliding-log" {
		t.Fatalf("specs %+v", specs)
	}
	ts := targets.Targets(specs)
	if d := targets.Digests(ts); len(d) != 64 || ts[1].SHA256 != "" {
		t.Errorf("digests %q, second %q: want one SHA-256", d, ts[1].SHA256)
	}
}
