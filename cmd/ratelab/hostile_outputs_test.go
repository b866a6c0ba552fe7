//go:build hostile

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outputsAttack is one attack of the hostile pass on what ratelab prints
// and writes (TestHostile's block "outputs"): args, the exit code and
// message wanted, and pre and post as TestHostile's attacks have them.
type outputsAttack struct {
	name string
	args []string
	exit int
	msg  string
	pre  func()
	post func() string
}

// outputsAttacks are the attacks on secrets, CI output and the out dir:
// redis-benchmark's command line on a Redis with a password, a password
// with a literal '%', names that forge GitHub workflow commands, the JSON
// of a command that fails on GitHub Actions, and suite targets named to
// leave --out. work is a directory of the pass; output is the last
// attack's stdout and stderr.
func outputsAttacks(t *testing.T, work string, output *string) []outputsAttack {
	addr, c := startLocked(t)
	path := func(name string) string { return filepath.Join(work, name) }
	write := func(name, data string) string {
		if err := os.WriteFile(path(name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	src, err := os.ReadFile("../../harness/verify/testdata/sliding-log.lua")
	if err != nil {
		t.Fatal(err)
	}
	forging := write("x\n::error::owned\n.lua", string(src))
	forgingSuite := write("forging.yaml", "targets:\n  - name: \"a\\n::add-mask::b\"\n    algorithm: fixed-window\n    limits: [{limit: 10, window: 300ms}]\n"+
		"  - name: \"c\\r::error::d\"\n    algorithm: sliding-log\n    limits: [{limit: 10, window: 300ms}]\n")
	leaving := write("leaving.yaml", "targets:\n"+
		"  - {name: \"..\", algorithm: sliding-log, limits: [{limit: 10, window: 300ms}]}\n"+
		"  - {name: \"a/b\", algorithm: sliding-log, limits: [{limit: 10, window: 300ms}]}\n"+
		"  - {name: \"a_b\", algorithm: sliding-log, limits: [{limit: 10, window: 300ms}]}\n")
	if err := os.Mkdir(path("leave"), 0o755); err != nil {
		t.Fatal(err)
	}
	onGitHub := func() {
		t.Setenv("GITHUB_ACTIONS", "true")
		t.Setenv("GITHUB_STEP_SUMMARY", path("summary.md"))
	}
	offGitHub := func() {
		t.Setenv("GITHUB_ACTIONS", "")
		t.Setenv("GITHUB_STEP_SUMMARY", "")
	}
	noSecret := func() string {
		b, _ := os.ReadFile(path("summary.md"))
		offGitHub()
		if strings.Contains(*output+string(b), "S3cr") {
			return "the password in the output or the job summary"
		}
		return ""
	}
	noForged := func() string {
		offGitHub()
		if bad := forgedCommands(*output); len(bad) > 0 {
			return "workflow commands forged: " + strings.Join(bad, " | ")
		}
		return ""
	}
	var stop chan struct{}
	var seen func() []string
	return []outputsAttack{
		{name: "bench --compare-redis-benchmark, password-only URL", exit: exitOK,
			args: []string{"bench", "--redis", lockedURL(addr, "", 0), "--compare-redis-benchmark", "--algorithms", "fixed-window", "--paths", "allow",
				"--rounds", "1", "--requests", "20000", "--clients", "2", "--out", path("bench-pw"), "--format", "csv"},
			pre: func() { stop = make(chan struct{}); seen = childCmdlines("redis-benchmark", 0, stop) },
			post: func() string {
				close(stop)
				mine := 0
				for _, cl := range seen() {
					if !strings.Contains(cl, addr[strings.LastIndex(addr, ":"):]) {
						continue // another redis-benchmark of this machine
					}
					mine++
					if strings.Contains(cl, "S3cr") {
						return "the password on redis-benchmark's command line"
					}
				}
				if users, _ := c.Do(context.Background(), "ACL", "USERS").StringSlice(); len(users) != 2 {
					return "ACL users left: " + strings.Join(users, ",")
				}
				if mine == 0 {
					return "redis-benchmark not seen running"
				}
				return ""
			}},
		{name: "verify, password with a literal % (GitHub)", exit: exitUsage, msg: "bad Redis URL",
			args: []string{"verify", "--redis", "redis://alice:S3cr%zzt@" + addr, "--algorithm", "sliding-log", "--limit", "10/300ms"},
			pre:  onGitHub, post: noSecret},
		{name: "script file named with a workflow command (GitHub)", exit: exitUsage,
			args: []string{"verify", "--redis", lockedURL(addr, "alice", 0), "--script", forging, "--limit", "10/300ms"},
			pre:  onGitHub, post: noForged},
		{name: "suite targets named with workflow commands (GitHub)", exit: exitFail,
			args: []string{"verify", "--redis", lockedURL(addr, "alice", 0), "--config", forgingSuite},
			pre:  onGitHub, post: noForged},
		{name: "verify --format json, Redis unreachable (GitHub)", exit: exitUsage,
			args: []string{"verify", "--redis", "redis://127.0.0.1:1", "--connect-timeout", "300ms", "--algorithm", "sliding-log", "--limit", "10/1s", "--format", "json", "-q"},
			pre:  onGitHub,
			post: func() string {
				offGitHub()
				// -q: stdout, then stderr's one error line
				dec := json.NewDecoder(strings.NewReader(*output))
				var v map[string]any
				if err := dec.Decode(&v); err != nil || v["error"] == nil {
					return "stdout is not the error's JSON object"
				}
				rest := (*output)[dec.InputOffset():]
				if !strings.HasPrefix(strings.TrimSpace(rest), "ratelab: ") {
					return "more than the JSON object on stdout"
				}
				return ""
			}},
		{name: "suite targets named .., a/b, a_b", exit: exitOK,
			args: []string{"verify", "--redis", lockedURL(addr, "alice", 0), "--config", leaving, "--out", path("leave/out")},
			post: func() string {
				if es, _ := os.ReadDir(path("leave")); len(es) != 1 {
					return "written beside --out"
				}
				for _, d := range []string{"__", "a_b", "a_b-2"} {
					if _, err := os.Stat(path("leave/out/" + d + "/verify.json")); err != nil {
						return "target files missing: " + d
					}
				}
				return ""
			}},
	}
}
