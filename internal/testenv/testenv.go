// Package testenv finds the external programs a few tests drive besides
// Redis: nginx (verify --http), headless Chromium (report.html), tmux (the
// demo in a terminal), and the interpreters with the rate-limit libraries
// of the exec adapters (Python's limits, Ruby's rack-attack).
//
// Under a plain `go test` a missing program skips the test that needs it, so
// the rest of the package still runs on a machine without it. `make test`
// sets RATELAB_REQUIRE_TOOLS=1 (and installs the programs first), and there a
// missing program fails the test: CI never passes by skipping them.
//
// redis-server is not one of these: every test of behaviour needs a real
// Redis and fails without one (harness/localredis/redistest).
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that turns a missing program from
// a skip into a failure when it is "1".
const RequireEnv = "RATELAB_REQUIRE_TOOLS"

// Tool returns the path of the first of names found: a bare name is looked up
// on PATH, a name with a slash is taken when it is a file there. target is the
// Makefile target that installs the program ("nginx", "chromium", "tmux"); the
// message names it. When none is found Tool skips t, or fails it when
// RATELAB_REQUIRE_TOOLS=1; it returns only with a path.
func Tool(t testing.TB, target string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if strings.Contains(n, "/") {
			if st, err := os.Stat(n); err == nil && !st.IsDir() {
				return n
			}
			continue
		}
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := target + " not found (looked for " + strings.Join(names, ", ") + "): `make " + target + "` installs it"
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + "; " + RequireEnv + "=1 requires it")
	}
	t.Skip(msg + "; skipped (" + RequireEnv + "=1, as in `make test`, makes this a failure)")
	return ""
}

// Interpreter returns the first of names (looked up as Tool does) that
// runs with the arguments check and exits 0 — an interpreter that has the
// libraries a test needs, e.g. check []string{"-c", "import limits"} for
// python3. target is the Makefile target that installs them. When none
// does, Interpreter skips t, or fails it when RATELAB_REQUIRE_TOOLS=1; it
// returns only with a path.
func Interpreter(t testing.TB, target string, check []string, names ...string) string {
	t.Helper()
	var tried []string
	for _, n := range names {
		p := n
		if !strings.Contains(n, "/") {
			var err error
			if p, err = exec.LookPath(n); err != nil {
				continue
			}
		}
		out, err := exec.Command(p, check...).CombinedOutput()
		if err == nil {
			return p
		}
		tried = append(tried, p+": "+strings.TrimSpace(string(out)))
	}
	msg := target + ": no interpreter with its libraries (ran " + strings.Join(check, " ") + " with " + strings.Join(names, ", ") +
		"): `make " + target + "` installs them"
	if len(tried) > 0 {
		msg += " (" + strings.Join(tried, "; ") + ")"
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + "; " + RequireEnv + "=1 requires it")
	}
	t.Skip(msg + "; skipped (" + RequireEnv + "=1, as in `make test`, makes this a failure)")
	return ""
}

// Race reports whether the test binary was built with -race: a test of
// concurrent code may then run on a smaller input, the same code paths
// with less CPU under the race detector.
func Race() bool { return raceEnabled }

// SkipUnderRace skips t in a test binary built with -race. It marks a
// heavy test (a table of verdicts, large strings) of a package that make
// test runs with -race, where the race detector watches the package's
// goroutines through its smaller tests: make test runs the tests that call
// SkipUnderRace or Race (directly in their func Test...) once more without
// -race, and only those. Its work is CPU under the race detector, not more
// coverage of the same code. A plain go test runs it as any other test.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("heavy: runs in make test's run without -race; the race detector watches the same code through this package's smaller tests")
	}
}
