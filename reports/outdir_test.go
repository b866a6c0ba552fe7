package reports

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
)

// --out never mixes old and new results.
func TestOutDir(t *testing.T) {
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
		dir, err := OutDir(c.out, "r1", c.force)
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
	if dir, err := OutDir("", "r1", false); err != nil || dir != filepath.Join("results", "r1") {
		t.Errorf("no out: %q, %v; want results/r1", dir, err)
	}
}

// PrepareOut creates the directory; undo removes it again only when it
// created it, with the decisions log in it.
func TestPrepareOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a", "b")
	dir, undo, err := PrepareOut(out, "r1", false)
	if err != nil || dir != out {
		t.Fatalf("PrepareOut = %q, %v", dir, err)
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
	if _, undo, err = PrepareOut(existing, "r1", false); err != nil {
		t.Fatal(err)
	}
	undo()
	if _, err := os.Stat(existing); err != nil {
		t.Errorf("undo removed a directory it did not create: %v", err)
	}
}

// FinishVerify leaves the whole record of a verdict, and verify.json marked
// incomplete of a run that stopped; dir "" writes nothing.
func TestFinishVerify(t *testing.T) {
	stopped := errors.New("calls keep failing")
	incomplete := func(err error) *measure.VerifyReport {
		return &measure.VerifyReport{Target: "fixed-window", Header: measure.Header{Error: err.Error()}}
	}
	for _, c := range []struct {
		name   string
		dir    bool
		runErr error
		files  string // the files of dir, sorted
	}{
		{"verdict", true, nil, "decisions.jsonl families.png families.svg report.html verify.json"},
		{"stopped", true, stopped, "decisions.jsonl verify.json"},
		{"no dir", false, stopped, ""},
	} {
		dir, out := t.TempDir(), ""
		var log *measure.DecisionLog
		if c.dir {
			out = dir
			var err error
			if log, err = CreateDecisionLog(dir); err != nil {
				t.Fatal(err)
			}
		}
		runErr, werr := FinishVerify(out, log, verifyFixture(false), c.runErr, incomplete)
		if runErr != c.runErr || werr != nil {
			t.Errorf("%s: got %v, %v; want %v, nil", c.name, runErr, werr, c.runErr)
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != c.files {
			t.Errorf("%s: files %q, want %q", c.name, got, c.files)
		}
		if c.runErr != nil && c.dir {
			if b, _ := os.ReadFile(filepath.Join(dir, "verify.json")); !strings.Contains(string(b), stopped.Error()) {
				t.Errorf("%s: verify.json misses why it stopped:\n%s", c.name, b)
			}
		}
	}
}
