package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

// ratelabLine is a command of a CI job in docs/ci.md: "- ratelab ..." (GitLab)
// or "- run: ratelab ..." (GitHub Actions).
var ratelabLine = regexp.MustCompile(`^\s*-\s+(?:run:\s+)?ratelab\s+(.*)$`)

// The CI recipe of docs/ci.md, as run: every ratelab command of its jobs,
// in a copy of docs/examples/ci, with a Redis service (REDIS_URL, as the
// jobs with one set it) and without one (ratelab starts its own
// redis-server): exit 0 and a JUnit file that validates, with a testcase
// per target and family.
func TestCIRecipe(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var commands [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := ratelabLine.FindStringSubmatch(sc.Text()); m != nil {
			commands = append(commands, strings.Fields(m[1]))
		}
	}
	if len(commands) < 4 {
		t.Fatalf("%d ratelab commands in docs/ci.md's jobs, want the 4 jobs' (GitHub and GitLab, with and without a service)", len(commands))
	}
	// the example's files, where the jobs' checkout has them
	work := t.TempDir()
	dir := filepath.Join(work, "ci")
	for _, c := range []struct{ from, to string }{
		{filepath.Join("..", "..", "docs", "examples", "ci", "ratelab.yaml"), filepath.Join(dir, "ratelab.yaml")},
		{filepath.Join("..", "..", "docs", "examples", "sliding-log-count.lua"), filepath.Join(work, "sliding-log-count.lua")},
	} {
		b, err := os.ReadFile(c.from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(c.to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)

	srv := redistest.Start()
	defer srv.Close()
	t.Setenv("RATELAB_REDIS", "")
	t.Setenv("GITHUB_ACTIONS", "")
	t.Setenv("GITHUB_STEP_SUMMARY", "")
	seen := map[string]bool{}
	for i, args := range commands {
		if seen[strings.Join(args, " ")] {
			continue // the same command in another job: run once each way
		}
		seen[strings.Join(args, " ")] = true
		for _, service := range []string{"redis://" + srv.Info.Addr, ""} {
			t.Setenv("REDIS_URL", service)
			junitFile := ""
			for k, a := range args {
				if a == "--junit" && k+1 < len(args) {
					junitFile = args[k+1]
					_ = os.Remove(junitFile)
				}
			}
			code, stdout, stderr := ratelab(t, args...)
			t.Logf("job %d (REDIS_URL=%q): ratelab %s: exit %d\n%s", i+1, service, strings.Join(args, " "), code, stderr)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			if strings.Count(stdout, ": HOLDS\n") != 3 { // the verdict ends its line; the parts line goes on
				t.Errorf("stdout does not show the three targets holding:\n%s", stdout)
			}
			if junitFile == "" {
				continue
			}
			s := validateJUnitFile(t, junitFile)
			if len(s.Suites) != 1 || s.Suites[0].Tests < 3 || s.Suites[0].Failures != 0 || s.Suites[0].Errors != 0 {
				t.Errorf("JUnit: %+v", s.Suites)
			}
		}
	}
}
