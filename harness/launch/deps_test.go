package launch_test

import (
	"os/exec"
	"strings"
	"testing"
)

// What prepares a command (its Redis, its results directory) and what
// cleans up after killed runs draw nothing: they compile no plotting
// package and no Docker client (testcontainers-go, moby, OpenTelemetry).
// The results directory is outdir's, the plots reports'.
func TestNoPlotsBelowReports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test runs go list -deps: %v", err)
	}
	const mod = "github.com/ratelab/ratelab/"
	for _, pkg := range []string{"outdir", "harness/launch", "harness/leftovers"} {
		out, err := exec.Command(goBin, "list", "-deps", mod+pkg).Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v %s", pkg, err, stderr)
		}
		var bad []string
		for _, dep := range strings.Fields(string(out)) {
			if dep == mod+"reports" {
				bad = append(bad, dep)
			}
			for _, s := range []string{"gonum.org/v1/plot", "docker", "moby", "testcontainers", "opentelemetry"} {
				if strings.Contains(dep, s) {
					bad = append(bad, dep)
					break
				}
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %d packages it must not (first: %s): files on disk come from outdir, plots stay in reports",
				pkg, len(bad), strings.Join(bad[:min(len(bad), 5)], ", "))
		}
	}
}
