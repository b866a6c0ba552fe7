package localredis_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The packages that start a throwaway redis-server only (the script probe,
// ratelab clean's sweep of killed clusters, the commands' launch) build it
// on localredis, and compile no Docker client: testcontainers-go, moby and,
// through them, OpenTelemetry stay in harness/engine, the one room that
// knows every way to get a Redis.
func TestNoDockerBelowEngine(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test runs go list -deps: %v", err)
	}
	const mod = "github.com/ratelab/ratelab/"
	for _, pkg := range []string{"harness/localredis", "harness/guard", "harness/leftovers", "harness/launch"} {
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
			if dep == mod+"harness/engine" {
				bad = append(bad, dep)
			}
			for _, s := range []string{"docker", "moby", "testcontainers", "opentelemetry"} {
				if strings.Contains(dep, s) {
					bad = append(bad, dep)
					break
				}
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %d packages it must not (first: %s): a local redis-server comes from localredis, not harness/engine",
				pkg, len(bad), strings.Join(bad[:min(len(bad), 5)], ", "))
		}
	}
}
