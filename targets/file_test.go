package targets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A target file's function and fcall: the library read relative to the
// file, its function picked; errors name the field and its line.
func TestFunctionFields(t *testing.T) {
	dir := t.TempDir()
	lib := "#!lua name=two\nredis.register_function('f', function() return 1 end)\nredis.register_function('g', function() return 1 end)\n"
	if err := os.WriteFile(filepath.Join(dir, "two.lua"), []byte(lib), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ratelab.yaml")
	spec, err := ParseFile([]byte("function: two.lua\nfcall: g\nargs: ['{limit}']\n"), path)
	if err != nil || spec.FCall != "g" || spec.Script != filepath.Join(dir, "two.lua") || spec.Name != "two.lua" || spec.Flag() != "--function" {
		t.Fatalf("got %+v, %v", spec, err)
	}
	for _, c := range []struct{ text, want string }{
		{"function: two.lua\n", "fcall: " + filepath.Join(dir, "two.lua") + " registers 2 functions (f, g): name the one to call (line 1)"},
		{"function: two.lua\nfcall: h\n", `fcall: ` + filepath.Join(dir, "two.lua") + ` registers no function "h" (it registers: f, g) (line 2)`},
		{"script: x.lua\nfcall: f\n", "fcall: goes with function (line 2)"},
		{"function: two.lua\nfcall: f\nsetup: s.lua\n", "setup: goes with script, not function (line 3)"},
		{"script: two.lua\n", "script: " + filepath.Join(dir, "two.lua") + " is a function library (#!lua name=two)"},
	} {
		if _, err := ParseFile([]byte(c.text), path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.text, err, c.want)
		}
	}
}

// FuzzTargetFile: parsing a target file never panics; an error names the file.
func FuzzTargetFile(f *testing.F) {
	for _, s := range []string{"algorithm: sliding-log\nlimits:\n  - {limit: 10, window: 1s}\n", "http: http://x\n", "script: x.lua\n",
		"algorithm: gcra\nkeys: [1]\n", "limits: [{limit: a}]\n", "- 1\n", "allowed_when: x\n", "algorithm: [a]\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseFile([]byte(s), "t.yaml"); err != nil && !strings.Contains(err.Error(), "t.yaml") {
			t.Errorf("error %q does not name the file", err)
		}
	})
}

// exec: in a target file is an adapter run in the file's directory,
// named by its command unless named; recorded and read back as it was.
func TestExecTargetFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text, name string
	}{
		{"exec: python3 adapter.py fixed-window\n", "python3 adapter.py fixed-window"},
		{"name: limits\nexec: python3 adapter.py\nlimits:\n  - {limit: 60, window: 1m}\n", "limits"},
	}
	for _, c := range cases {
		s, err := ParseFile([]byte(c.text), "/srv/app/ratelab.yaml")
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if s.Exec == "" || s.ExecDir != "/srv/app" || s.Name != c.name || s.Label() != c.name {
			t.Errorf("%q: exec %q in %q, named %q; want it in /srv/app, named %q", c.text, s.Exec, s.ExecDir, s.Name, c.name)
		}
		back, err := FromRecord(s.Record(), "")
		if err != nil || back.Exec != s.Exec || back.ExecDir != s.ExecDir {
			t.Errorf("%q: recorded and read back as %+v, %v", c.text, back, err)
		}
	}
}
