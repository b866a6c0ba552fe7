package targets

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// LoadDefault loads DefaultFile of the working directory for a command
// given no target, saying so; without one, Load's error says it would do.
func TestLoadDefault(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string // DefaultFile's text; "" for none
		names   []string
		err     string // in the error; "" for none
		countEr bool   // the error is ErrTargetCount
	}{
		// a suite of two, both loaded
		{"suite", "targets:\n  - algorithm: gcra\n    limits: [{limit: 3, window: 1s}]\n  - algorithm: fixed-window\n    limits: [{limit: 3, window: 1s}]\n", []string{"gcra", "fixed-window"}, "", false},
		// no file: the count error, and the way out
		{"none", "", nil, "; or put a ratelab.yaml in the working directory", true},
		// a file that is wrong: its own error, no advice
		{"bad file", "algoritm: gcra\n", nil, "algoritm: unknown field", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if tc.file != "" {
				if err := os.WriteFile(DefaultFile, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var progress strings.Builder
			specs, err := LoadDefault(Given{Several: true}, &progress)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, want an error holding %q", err, tc.err)
			case errors.Is(err, ErrTargetCount) != tc.countEr:
				t.Errorf("got %v, ErrTargetCount %v, want %v", err, !tc.countEr, tc.countEr)
			}
			var names []string
			for _, s := range specs {
				names = append(names, s.Name)
			}
			if !slices.Equal(names, tc.names) {
				t.Errorf("targets %q, want %q", names, tc.names)
			}
			said := progress.String() == "ratelab: verifying ratelab.yaml (found in the working directory)\n"
			if said != (tc.file != "") {
				t.Errorf("progress %q, want the file said when there is one", progress.String())
			}
		})
	}
}
