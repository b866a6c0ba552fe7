package testenv

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goroutineStart matches a line of Go that starts a goroutine, or hands a
// function to one the runtime starts (time.AfterFunc, context.AfterFunc).
var goroutineStart = regexp.MustCompile(`^\s*go (func|[A-Za-z_][A-Za-z0-9_.]*\()|\btime\.AfterFunc\(|\bcontext\.AfterFunc\(|errgroup\.`)

// make test runs -race on the packages whose own code starts goroutines
// (the Makefile's RACE_PKGS) and not on the others: a package that starts
// one and is missing from the list would lose its race detection, and one
// listed that starts none pays -race's cost for nothing.
func TestRacePackages(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	listed := racePkgs(t, string(makefile))
	var starts []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		pkg = "./" + filepath.ToSlash(pkg)
		if slices.Contains(starts, pkg) {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); !strings.HasPrefix(strings.TrimSpace(line), "//") && goroutineStart.MatchString(line) {
				starts = append(starts, pkg)
				break
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(starts)
	for _, p := range starts {
		if !slices.Contains(listed, p) {
			t.Errorf("%s starts goroutines but is not in the Makefile's RACE_PKGS: make test would run it without -race", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(starts, p) {
			t.Errorf("%s is in the Makefile's RACE_PKGS but its code starts no goroutine", p)
		}
	}
}

// racePkgs reads the RACE_PKGS list of a Makefile (continued lines included).
func racePkgs(t *testing.T, makefile string) []string {
	t.Helper()
	i := strings.Index(makefile, "\nRACE_PKGS :=")
	if i < 0 {
		t.Fatal("the Makefile has no RACE_PKGS")
	}
	var pkgs []string
	for _, line := range strings.Split(makefile[i+len("\nRACE_PKGS :="):], "\n") {
		cont := strings.HasSuffix(strings.TrimSpace(line), `\`)
		pkgs = append(pkgs, strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), `\`))...)
		if !cont {
			break
		}
	}
	slices.Sort(pkgs)
	return pkgs
}

// make test runs a test of RACE_PKGS once: with -race, except the tests
// that call SkipUnderRace or Race, which it finds by reading the source
// (the Makefile's awk: the top-level func Test... around the call) and runs
// again without -race. A call from anywhere else (a helper, a closure at
// package level) would not be found, and the part it skips would run
// nowhere in make test.
func TestRaceSkipsInTestFuncs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, pkg := range racePkgs(t, string(makefile)) {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				ast.Inspect(decl, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok || (sel.Sel.Name != "SkipUnderRace" && sel.Sel.Name != "Race") {
						return true
					}
					if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "testenv" {
						return true
					}
					calls++
					if fd, ok := decl.(*ast.FuncDecl); !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") {
						rel, _ := filepath.Rel(root, path)
						t.Errorf("%s:%d: testenv.%s outside a func Test...: make test would not run what it skips", rel, fset.Position(call.Pos()).Line, sel.Sel.Name)
					}
					return true
				})
			}
		}
	}
	if calls == 0 {
		t.Fatal("no testenv.SkipUnderRace or testenv.Race call found in RACE_PKGS: the check reads nothing")
	}
}
