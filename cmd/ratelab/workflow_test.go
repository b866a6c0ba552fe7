package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

// ownAnnotation is a line of ratelab's own annotations (reports.WriteAnnotations).
var ownAnnotation = regexp.MustCompile(`^::(error|warning) (file=[^,:]*,)?title=ratelab verify%3A [^:,]*::`)

// forgedCommands are the lines of out that the Actions runner would obey
// (starting, after white space, with "::" or "##["; lines end at LF or
// CR) and that are not ratelab's own annotations.
func forgedCommands(out string) []string {
	var bad []string
	for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		t := strings.TrimLeftFunc(l, unicode.IsSpace)
		if (strings.HasPrefix(t, "::") || strings.HasPrefix(t, "##[")) && !ownAnnotation.MatchString(l) {
			bad = append(bad, l)
		}
	}
	return bad
}

// On GitHub Actions, a script file and a suite target whose names hold a
// line break and a workflow command: no line of stdout or stderr is a
// command the runner obeys, but ratelab's own annotations.
func TestNoForgedWorkflowCommands(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	url := "redis://" + srv.Info.Addr
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(t.TempDir(), "summary.md"))
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "harness", "verify", "testdata", "sliding-log.lua"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "x\n::error::owned\n.lua")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(suite, []byte(`targets:
  - name: "a\n::add-mask::b\n##[error]c"
    algorithm: fixed-window
    limits: [{limit: 10, window: 300ms}]
  - name: "d\r::error::e"
    algorithm: sliding-log
    limits: [{limit: 10, window: 300ms}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--arg", "{now_us}", "--arg", "{window_us}", "--arg", "{limit}", "--arg", "{request_id}"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"script", append([]string{"verify", "--redis", url, "--script", script, "--limit", "10/300ms"}, args...)},
		{"script that fails to load", []string{"verify", "--redis", url, "--script", script, "--limit", "10/300ms"}},
		{"suite", []string{"verify", "--redis", url, "--config", suite}},
		{"run", append([]string{"run", "--redis", url, "--script", script, "--scenarios", "boundary-burst", "--out", filepath.Join(dir, "run")}, args...)},
	} {
		code, stdout, stderr := ratelab(t, tc.args...)
		if code == exitOK && tc.name == "suite" {
			t.Errorf("%s: exit 0, want a violation (fixed-window)", tc.name)
		}
		if !strings.Contains(stdout+stderr, "owned") && !strings.Contains(stdout+stderr, "add-mask") {
			t.Errorf("%s: the name is not shown at all (exit %d): %s", tc.name, code, stderr)
		}
		if bad := forgedCommands(stdout + "\n" + stderr); len(bad) > 0 {
			t.Errorf("%s: the runner would obey %q (exit %d)", tc.name, bad, code)
		}
	}
}

// --format json prints exactly one JSON object on stdout, errors
// included, also on GitHub Actions (annotations go to stderr), for every
// command that has it.
func TestJSONOnlyOnStdout(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(t.TempDir(), "summary.md"))
	t.Setenv("REDIS_URL", "")
	t.Setenv("RATELAB_REDIS", "")
	down := []string{"--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--format", "json"}
	srv := redistest.Start()
	defer srv.Close()
	up := []string{"--redis", "redis://" + srv.Info.Addr, "--format", "json"}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"verify, Redis unreachable", append([]string{"verify", "--algorithm", "sliding-log", "--limit", "10/1s"}, down...), exitUsage},
		{"verify violated", append([]string{"verify", "--algorithm", "fixed-window", "--limit", "10/300ms"}, up...), exitFail},
		{"verify suite, Redis unreachable", append([]string{"verify", "--config", writeSuite(t, dir)}, down...), exitUsage},
		{"verify suite violated", append([]string{"verify", "--config", writeSuite(t, dir)}, up...), exitFail},
		{"run, Redis unreachable", append([]string{"run", "--out", filepath.Join(dir, "run")}, down...), exitUsage},
		{"capacity, Redis unreachable", append([]string{"capacity", "--out", filepath.Join(dir, "cap")}, down...), exitUsage},
		{"bench, Redis unreachable", append([]string{"bench", "--out", filepath.Join(dir, "bench")}, down...), exitUsage},
		{"demo, Redis unreachable", append([]string{"demo", "--out", filepath.Join(dir, "demo")}, down...), exitUsage},
		{"report of no directory", []string{"report", filepath.Join(dir, "nope"), "--format", "json"}, exitUsage},
	} {
		code, stdout, stderr := ratelab(t, tc.args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d: %s", tc.name, code, tc.code, stderr)
		}
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(stdout))
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%s: stdout is not a JSON object: %v\n%q", tc.name, err, stdout)
			continue
		}
		if dec.More() {
			t.Errorf("%s: stdout holds more than one JSON object:\n%s", tc.name, stdout)
		}
		if tc.code != exitOK && v["error"] == nil && v["verdict"] == nil {
			t.Errorf("%s: the JSON says neither the error nor the verdict:\n%s", tc.name, stdout)
		}
	}
}
