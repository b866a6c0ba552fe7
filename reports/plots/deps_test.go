package plots_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Package plots is the only one that draws: no other package of the
// module imports gonum/plot, so reports renders text alone and a Go
// program that verifies a script with ratelabtest compiles no plotting
// package.
func TestOnlyPlotsDraws(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test runs go list: %v", err)
	}
	const mod = "github.com/ratelab/ratelab/"
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	drawing := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "gonum.org/v1/plot") {
				if f[0] != mod+"reports/plots" {
					t.Errorf("%s imports %s: only reports/plots draws", f[0], imp)
				}
				drawing++
				break
			}
		}
	}
	if drawing == 0 {
		t.Error("no package imports gonum.org/v1/plot: the check reads nothing")
	}
	for _, pkg := range []string{"ratelabtest", "reports", "publish/ci", "outdir", "harness/verify"} {
		deps, err := exec.Command(goBin, "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if strings.Contains(string(deps), "gonum.org/") {
			t.Errorf("%s depends on gonum: it must not compile a plotting package", pkg)
		}
	}
}

// Package reports renders into the writers it is given: it imports
// neither os nor a package of the disk (outdir, publish), so a file of a
// results directory or of CI is written by publish alone.
func TestReportsRenderOnly(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test runs go list: %v", err)
	}
	const mod = "github.com/ratelab/ratelab/"
	out, err := exec.Command(goBin, "list", "-f", `{{join .Imports " "}}`, mod+"reports").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := strings.Fields(string(out))
	if len(imports) == 0 {
		t.Fatal("reports imports nothing: the check reads nothing")
	}
	for _, imp := range imports {
		if imp == "os" || imp == mod+"outdir" || strings.HasPrefix(imp, mod+"publish") {
			t.Errorf("reports imports %s: it renders only, publish writes files", imp)
		}
	}
}
