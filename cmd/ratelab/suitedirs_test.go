package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A suite's targets named "..", "a/b" and "a_b": each target's files in a
// directory of its own inside --out, nothing written beside --out.
func TestSuiteTargetDirsStayInOut(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	targets := `targets:
  - name: ".."
    algorithm: sliding-log
    limits: [{limit: 10, window: 300ms}]
  - name: "a/b"
    algorithm: sliding-log
    limits: [{limit: 10, window: 300ms}]
  - name: "a_b"
    algorithm: sliding-log
    limits: [{limit: 10, window: 300ms}]
`
	if err := os.WriteFile(suite, []byte(targets), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := ratelab(t, "verify", "--redis", "exec", "--config", suite, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	beside, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(beside) != 1 || beside[0].Name() != "out" {
		var names []string
		for _, e := range beside {
			names = append(names, e.Name())
		}
		t.Errorf("written beside --out: %q", names)
	}
	dirs, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dirs {
		got = append(got, d.Name())
		if _, err := os.Stat(filepath.Join(out, d.Name(), "verify.json")); err != nil {
			t.Errorf("target %s: %v", d.Name(), err)
		}
	}
	if want := []string{"__", "a_b", "a_b-2"}; !slices.Equal(got, want) {
		t.Errorf("target directories %q, want %q", got, want)
	}
}
