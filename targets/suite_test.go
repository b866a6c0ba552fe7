package targets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseTargetsSuite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lim.lua"), []byte("return 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "suite.yaml")
	suite := `targets:
  - algorithm: sliding-log
    limits: [{limit: 10, window: 1s}]
  - name: mine
    script: lim.lua
    limits: [{limit: 5, window: 1d}]
  - algorithm: fixed-window
    limits: [{limit: 3, window: 2s}]
`
	specs, err := ParseTargets([]byte(suite), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 {
		t.Fatalf("%d targets, want 3", len(specs))
	}
	for i, want := range []struct {
		name   string
		count  int64
		window string
	}{{"sliding-log", 10, "1s"}, {"mine", 5, "24h0m0s"}, {"fixed-window", 3, "2s"}} {
		s := specs[i]
		if s.Name != want.name || len(s.Limits) != 1 || s.Limits[0].Count != want.count || s.Limits[0].Window.String() != want.window || s.From != path {
			t.Errorf("target %d: %q %v from %q, want %q %d per %s from %q", i+1, s.Name, s.Limits, s.From, want.name, want.count, want.window, path)
		}
	}
	if specs[1].Script != filepath.Join(dir, "lim.lua") {
		t.Errorf("script %q, want it relative to the suite file", specs[1].Script)
	}
	// one target is still one
	one, err := ParseTargets([]byte("algorithm: gcra\n"), "one.yaml")
	if err != nil || len(one) != 1 || one[0].Algorithm != "gcra" {
		t.Errorf("one target: %v %v", one, err)
	}
	for _, c := range []struct{ text, want string }{
		{"targets: []\n", "s.yaml: targets: must be a non-empty list of targets (line 1)"},
		{"targets:\n  - algorithm: gcra\nname: x\n", "a suite has no other field"},
		{"targets:\n  - algorithm: gcra\n  - algorithm: gcra\n", `s.yaml: targets[2]: name: "gcra" is also targets[1]'s`},
		{"targets:\n  - algorithm: gcra\n  - algoritm: x\n", "s.yaml: targets[2]: algoritm: unknown field"},
		{"targets:\n  - 1\n", "s.yaml: targets[1]: must be a target"},
	} {
		_, err := ParseTargets([]byte(c.text), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to hold %q", c.text, err, c.want)
		}
	}
}

func TestLoadSeveral(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(path, []byte("targets:\n  - algorithm: gcra\n  - algorithm: sliding-log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Given{Files: []string{path}}); err == nil || !strings.Contains(err.Error(), "holds 2 targets; this command takes one") {
		t.Errorf("a suite where one target is taken: %v", err)
	}
	specs, err := Load(Given{Files: []string{path, path}, Several: true})
	if err != nil || len(specs) != 4 {
		t.Errorf("Several: %d specs, %v; want 4", len(specs), err)
	}
	if _, err := Load(Given{Files: []string{path}, Algorithm: "gcra", Several: true}); err == nil {
		t.Error("Several took a file beside an --algorithm")
	}
}
