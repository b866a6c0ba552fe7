package targets

import (
	"strings"
	"testing"
)

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
