package server_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The library packages compile no Docker client: only harness/engine
// (provisioning) imports testcontainers-go, moby and, through them,
// OpenTelemetry; only cmd/ratelab and harness/engine/enginetest (the
// container tests' image) import engine, so the test binaries of every
// other package, on redistest's servers, link no container engine. And
// harness/server, which the access check lives in, runs no algorithm; nor
// do the safety rooms but guard (which builds the user's scripts), and
// none of them imports package harness.
func TestNoDockerInLibrary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test runs go list -deps: %v", err)
	}
	const mod = "github.com/ratelab/ratelab/"
	cases := []struct {
		pkg    string
		banned []string
	}{
		{"harness", nil},
		{"harness/run", nil},
		{"harness/replay", nil},
		{"harness/demo", nil},
		{"harness/verify", nil},
		{"harness/capacity", nil},
		{"harness/bench", nil},
		{"harness/server", []string{mod + "algorithms", mod + "harness/engine"}},
		// the safety rooms sit on the handle, beside the engine that runs
		// commands, not on it
		{"harness/leftovers", []string{mod + "algorithms", mod + "harness/engine", mod + "harness"}},
		{"harness/busy", []string{mod + "algorithms", mod + "harness/engine", mod + "harness"}},
		{"harness/evict", []string{mod + "algorithms", mod + "harness/engine", mod + "harness"}},
		{"harness/guard", []string{mod + "harness/engine", mod + "harness"}},
		{"algorithms", nil},
		{"custom", nil},
		{"measure", nil},
		{"reports", nil},
		{"scenarios", nil},
		{"targets", nil},
		{"harness/localredis", []string{mod + "harness/engine"}},
		{"ratelabtest", []string{mod + "harness/engine"}},
		{"harness/localredis/redistest", []string{mod + "harness/engine"}},
		{"harness/demo/live", []string{mod + "harness", mod + "harness/demo"}},
	}
	for _, tc := range cases {
		out, err := exec.Command(goBin, "list", "-deps", mod+tc.pkg).Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v %s", tc.pkg, err, stderr)
		}
		var bad []string
		for _, dep := range strings.Fields(string(out)) {
			if isDocker(dep) {
				bad = append(bad, dep)
				continue
			}
			for _, b := range tc.banned {
				if dep == b {
					bad = append(bad, dep)
				}
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %d packages it must not (first: %s): the library must not import harness/engine (provisioning)",
				tc.pkg, len(bad), strings.Join(bad[:min(len(bad), 5)], ", "))
		}
	}
}

// isDocker reports a package of Docker's client or of what it pulls in.
func isDocker(pkg string) bool {
	for _, s := range []string{"docker", "moby", "testcontainers", "opentelemetry"} {
		if strings.Contains(pkg, s) {
			return true
		}
	}
	return false
}
