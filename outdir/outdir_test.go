package outdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/field"
)

// --out never mixes old and new results.
func TestResolve(t *testing.T) {
	mk := func(files ...string) string {
		dir := t.TempDir()
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	cases := []struct {
		name  string
		out   string
		force bool
		err   string   // "" for none; else in the error, which names "out"
		left  []string // files left in out
	}{
		{"new", filepath.Join(t.TempDir(), "new"), false, "", nil},
		{"empty", mk(), false, "", nil},
		{"earlier results", mk("results.json", "ratio.png"), false, "pass --force", []string{"ratio.png", "results.json"}},
		{"earlier results, force", mk("results.json", "ratio.png"), true, "", nil},
		{"foreign files, force", mk("results.json", "notes.txt"), true, "notes.txt", []string{"notes.txt", "results.json"}},
	}
	for _, c := range cases {
		dir, err := Resolve(c.out, "r1", c.force)
		if name, _ := field.Name(err); c.err != "" && (err == nil || name != "out" || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: error %v, want one naming out with %q", c.name, err, c.err)
		} else if c.err == "" && (err != nil || dir != c.out) {
			t.Errorf("%s: %q, %v; want %q", c.name, dir, err, c.out)
		}
		entries, _ := os.ReadDir(c.out)
		var left []string
		for _, e := range entries {
			left = append(left, e.Name())
		}
		if strings.Join(left, ",") != strings.Join(c.left, ",") {
			t.Errorf("%s: left %v, want %v", c.name, left, c.left)
		}
	}
	if dir, err := Resolve("", "r1", false); err != nil || dir != filepath.Join("results", "r1") {
		t.Errorf("no out: %q, %v; want results/r1", dir, err)
	}
}

// Prepare creates the directory; undo removes it again only when it
// created it, with the decisions log in it.
func TestPrepare(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a", "b")
	dir, undo, err := Prepare(out, "r1", false)
	if err != nil || dir != out {
		t.Fatalf("Prepare = %q, %v", dir, err)
	}
	log, err := CreateDecisionLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	undo()
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("after undo %s is still there (%v)", out, err)
	}
	existing := t.TempDir()
	if _, undo, err = Prepare(existing, "r1", false); err != nil {
		t.Fatal(err)
	}
	undo()
	if _, err := os.Stat(existing); err != nil {
		t.Errorf("undo removed a directory it did not create: %v", err)
	}
}
