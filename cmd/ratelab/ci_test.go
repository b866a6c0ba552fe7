package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish/ci"
)

// writeSuite writes a suite of three targets, one of them violated
// (fixed-window: 2L across a boundary), and returns its path.
func writeSuite(t *testing.T, dir string) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "harness", "verify", "testdata", "sliding-log.lua"))
	if err != nil {
		t.Fatal(err)
	}
	suite := `targets:
  - algorithm: sliding-log
    limits: [{limit: 10, window: 300ms}]
  - algorithm: fixed-window
    limits: [{limit: 10, window: 300ms}]
  - name: my-sliding-log
    script: ` + script + `
    args: ["{now_us}", "{window_us}", "{limit}", "{request_id}"]
    limits: [{limit: 5, window: 500ms}]
`
	p := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(p, []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// junitSchema is the schema the reports package tests with, found before
// any test changes the working directory.
var junitSchema, _ = filepath.Abs(filepath.Join("..", "..", "reports", "testdata", "junit.xsd"))

// validateJUnitFile checks a JUnit file against the schema the reports
// package tests with (xmllint), and reads it back as a CI tool does.
func validateJUnitFile(t *testing.T, path string) junit.Testsuites {
	t.Helper()
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("needs xmllint (Debian: libxml2-utils; make test installs it): %v", err)
	}
	if out, err := exec.Command(bin, "--noout", "--schema", junitSchema, path).CombinedOutput(); err != nil {
		t.Fatalf("%s does not validate: %v\n%s", path, err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s junit.Testsuites
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A suite of three targets, one violated, on the Redis of REDIS_URL: exit
// 1 naming it, a JUnit file with a testcase per target and family, the
// flag winning over the environment, RATELAB_REDIS over REDIS_URL.
func TestVerifySuiteFromEnv(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	url := "redis://" + srv.Info.Addr
	dir := t.TempDir()
	suite := writeSuite(t, dir)
	junitFile := filepath.Join(dir, "junit.xml")

	t.Setenv("RATELAB_REDIS", "")
	t.Setenv("REDIS_URL", url)
	code, stdout, stderr := ratelab(t, "verify", "--config", suite, "--junit", junitFile)
	if code != exitFail {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "verify: 2 of 3 targets hold; failed: fixed-window") {
		t.Errorf("stderr does not name the violated target:\n%s", stderr)
	}
	if !strings.Contains(stderr, "--redis from $REDIS_URL: "+url) || strings.Count(stderr, "--redis from") != 1 {
		t.Errorf("stderr does not say once which Redis was taken from the environment:\n%s", stderr)
	}
	if strings.Count(stdout, "ratelab verify: ") != 3 || !strings.Contains(stdout, "COUNTER-EXAMPLE") {
		t.Errorf("stdout lacks the three tables and the counter-example:\n%s", stdout)
	}
	s := validateJUnitFile(t, junitFile)
	if len(s.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1", len(s.Suites))
	}
	classes := map[string]int{}
	var failures []junit.Testcase
	for _, tc := range s.Suites[0].Testcases {
		classes[tc.Classname]++
		if tc.Failure != nil {
			failures = append(failures, tc)
		}
	}
	if len(classes) != 3 || classes["fixed-window"] == 0 || classes["my-sliding-log"] == 0 {
		t.Errorf("testcases per target %v, want the three targets", classes)
	}
	if len(failures) == 0 {
		t.Fatal("no failed testcase")
	}
	for _, f := range failures {
		if f.Classname != "fixed-window" {
			t.Errorf("%s %s failed, only fixed-window should", f.Classname, f.Name)
		}
	}
	if !strings.Contains(failures[0].Failure.Data, "COUNTER-EXAMPLE (VIOLATED)") || !strings.Contains(failures[0].Failure.Message, "accepted within") {
		t.Errorf("failure without the counter-example: %q\n%s", failures[0].Failure.Message, failures[0].Failure.Data)
	}

	// the flag wins over the environment (here unreachable)
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1")
	code, _, stderr = ratelab(t, "verify", "--config", suite, "--redis", url, "-q")
	if code != exitFail || strings.Contains(stderr, "from $REDIS_URL") || !strings.Contains(stderr, "failed: fixed-window") {
		t.Errorf("--redis over $REDIS_URL: exit %d, stderr:\n%s", code, stderr)
	}
	// RATELAB_REDIS over REDIS_URL
	t.Setenv("RATELAB_REDIS", url)
	code, _, stderr = ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10/300ms")
	if code != exitOK || !strings.Contains(stderr, "--redis from $RATELAB_REDIS") {
		t.Errorf("$RATELAB_REDIS over $REDIS_URL: exit %d, stderr:\n%s", code, stderr)
	}
	// and the unreachable one is said, exit 2
	t.Setenv("RATELAB_REDIS", "")
	code, _, stderr = ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10/300ms", "--connect-timeout", "300ms")
	if code != exitUsage || !strings.Contains(stderr, "--redis from $REDIS_URL: redis://127.0.0.1:1") || !strings.Contains(stderr, "connection refused") {
		t.Errorf("unreachable $REDIS_URL: exit %d, stderr:\n%s", code, stderr)
	}
}

// --junit - writes the JUnit report, alone, to stdout; --format json of a
// suite is one object; GitHub's annotations and job summary.
func TestVerifyCIOutputs(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	url := "redis://" + srv.Info.Addr
	dir := t.TempDir()
	suite := writeSuite(t, dir)
	t.Setenv("GITHUB_ACTIONS", "")
	t.Setenv("GITHUB_STEP_SUMMARY", "")

	code, stdout, stderr := ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10/300ms", "--redis", url, "--junit", "-")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s junit.Testsuites
	if err := xml.Unmarshal([]byte(stdout), &s); err != nil || len(s.Suites) != 1 || s.Suites[0].Tests == 0 || s.Suites[0].Failures != 0 {
		t.Errorf("--junit -: stdout is not one passing JUnit report (%v):\n%s", err, stdout)
	}
	if !strings.HasPrefix(stdout, "<?xml") {
		t.Errorf("--junit -: stdout holds more than the report:\n%.200s", stdout)
	}

	code, stdout, _ = ratelab(t, "verify", "--config", suite, "--redis", url, "--format", "json", "-q")
	var got struct {
		Tool, ToolVersion string
		Verdict           measure.Verdict
		Targets           []measure.VerifyReport
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("suite --format json is not one object: %v\n%s", err, stdout)
	}
	if code != exitFail || got.Verdict != measure.Violated || len(got.Targets) != 3 || got.Targets[1].CounterExample == nil {
		t.Errorf("suite JSON: exit %d, verdict %s, %d targets", code, got.Verdict, len(got.Targets))
	}

	summary := filepath.Join(dir, "summary.md")
	if err := os.WriteFile(summary, []byte("# earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	code, stdout, _ = ratelab(t, "verify", "--config", suite, "--redis", url, "-q")
	var annotations []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "::") {
			annotations = append(annotations, l)
		}
	}
	if code != exitFail || len(annotations) != 1 ||
		!strings.HasPrefix(annotations[0], "::error file="+escapeForTest(suite)+",title=ratelab verify%3A fixed-window violated (10 per 300ms)::") {
		t.Errorf("annotations (exit %d): %q", code, annotations)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# earlier step\n### ratelab verify: 2 of 3 targets hold") || !strings.Contains(string(b), "| fixed-window | 10 per 300ms | ❌ violated |") {
		t.Errorf("job summary not appended as expected:\n%s", b)
	}
}

func escapeForTest(s string) string {
	return strings.NewReplacer("%", "%25", ":", "%3A", ",", "%2C").Replace(s)
}

// ratelab.yaml in the working directory is the target when none is given.
//
// It changes the process's working directory, so it is not parallel
// (t.Chdir refuses a parallel test): the parallel tests, which resolve
// relative paths, start only when the sequential ones are done.
func TestVerifyFindsRatelabYAML(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ratelab.yaml"), []byte("algorithm: fixed-window\nlimits: [{limit: 5, window: 1d}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, stdout, stderr := ratelab(t, "verify", "--redis", "redis://"+srv.Info.Addr)
	if code != exitFail || !strings.Contains(stderr, "verifying ratelab.yaml (found in the working directory)") || !strings.Contains(stdout, "fixed-window — 5 per 1d: VIOLATED") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if err := os.Remove(filepath.Join(dir, "ratelab.yaml")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = ratelab(t, "verify", "--redis", "redis://"+srv.Info.Addr)
	if code != exitUsage || !strings.Contains(stderr, "(got 0); or put a ratelab.yaml in the working directory") {
		t.Errorf("no target, no ratelab.yaml: exit %d, %s", code, stderr)
	}
}

// --format json prints a JSON object on stdout also when the command
// fails before a result; --quiet leaves stderr to the error alone; no
// colour codes anywhere (NO_COLOR holds by construction).
func TestJSONErrorAndQuiet(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	t.Setenv("RATELAB_REDIS", "")
	t.Setenv("NO_COLOR", "1")
	for _, args := range [][]string{
		{"verify", "--algorithm", "sliding-log", "--limit", "10/1s", "--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--format", "json"},
		{"run", "--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--format", "json", "--out", t.TempDir()},
		{"verify", "--algorithm", "sliding-log", "--limit", "0/1s", "--format", "json"},
	} {
		code, stdout, stderr := ratelab(t, append(args, "-q")...)
		var e ci.ErrorJSON
		if err := json.Unmarshal([]byte(stdout), &e); err != nil {
			t.Errorf("%v: stdout is not a JSON object: %v\n%q", args, err, stdout)
			continue
		}
		if code != exitUsage || e.ExitCode != exitUsage || e.Tool != "ratelab" || e.ToolVersion == "" || e.Command != args[0] || e.Complete || e.Error == "" {
			t.Errorf("%v: exit %d, %+v", args, code, e)
		}
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "ratelab: ") || lines[0] != "ratelab: "+e.Error {
			t.Errorf("%v: --quiet stderr is more than the error:\n%s", args, stderr)
		}
	}
	srv := redistest.Start()
	defer srv.Close()
	code, stdout, stderr := ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10/300ms", "--redis", "redis://"+srv.Info.Addr, "--quiet")
	if code != exitOK || stderr != "" || !strings.Contains(stdout, "HOLDS") {
		t.Errorf("--quiet: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout+stderr, "\x1b") {
		t.Errorf("an escape sequence in the output: %q", stdout+stderr)
	}
}

// `cat access.log | ratelab run --traffic -`: the traffic from standard
// input; a CSV whose only time-like column is timestamp_ms needs no
// --time-field.
func TestRunTrafficFromStdin(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	var log strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&log, "10.0.0.%d - - [01/May/2024:12:00:%02d +0000] \"GET / HTTP/1.1\" 200 1\n", i%3, i/10)
	}
	var csv strings.Builder
	csv.WriteString("timestamp_ms,key\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&csv, "%d,u%d\n", 1732240000000+int64(i)*40, i%2)
	}
	for _, c := range []struct {
		name, input, path, want string
	}{
		{"access log on -", log.String(), "-", "traffic: - (access-log): 200 requests from 3 keys"},
		{"timestamp_ms csv on /dev/stdin", csv.String(), "/dev/stdin", "traffic: /dev/stdin (csv): 50 requests from 2 keys"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				_, _ = w.WriteString(c.input)
				_ = w.Close()
			}()
			old := os.Stdin
			os.Stdin = r
			defer func() { os.Stdin = old; _ = r.Close() }()
			path := c.path
			if path == "/dev/stdin" { // this process's fd 0 is not the pipe: name the pipe's descriptor as a shell would
				path = fmt.Sprintf("/dev/fd/%d", r.Fd())
				c.want = strings.Replace(c.want, "/dev/stdin", path, 1)
			}
			code, stdout, stderr := ratelab(t, "run", "--traffic", path, "--redis", "redis://"+srv.Info.Addr,
				"--limit", "5", "--window", "1s", "--algorithms", "sliding-log", "--out", t.TempDir())
			if code != exitOK || !strings.Contains(stdout+stderr, c.want) || !strings.Contains(stdout, "sliding-log") {
				t.Errorf("exit %d\nstdout %s\nstderr %s\nwant %q", code, stdout, stderr, c.want)
			}
		})
	}
}
