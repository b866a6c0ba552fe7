package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/measure"
)

// testdataScript is a script of the verify package's testdata.
func testdataScript(name string) string {
	return filepath.Join("..", "..", "harness", "verify", "testdata", name)
}

var slidingArgs = []string{"--arg", "{now_us}", "--arg", "{window_us}", "--arg", "{limit}", "--arg", "{request_id}"}

// A violation's counter-example is shrunk (a fixed window: L+1 requests),
// written whole to verify.json with what reproduces it, and as a traffic
// file; --replay sends it again: exit 1 while the target still fails it,
// 0 against a corrected one, 2 when the recorded script changed or the
// file has nothing to replay. run --traffic replays the traffic file.
func TestVerifyReplay(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	redisURL := "redis://" + srv.Info.Addr
	dir := t.TempDir()
	script := filepath.Join(dir, "epoch-fixed-window.lua")
	src, err := os.ReadFile(testdataScript("epoch-fixed-window.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := []string{"--script", script, "--arg", "{now_us}", "--arg", "{window_us}", "--arg", "{limit}", "--limit", "10", "--window", "300ms", "--redis", redisURL, "--timeout", "5s"}
	code, stdout, stderr := ratelab(t, append([]string{"verify", "--out", out}, args...)...)
	if code != exitFail {
		t.Fatalf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	rep, err := measure.ReadVerify(filepath.Join(out, "verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	ce, spec := rep.CounterExample, rep.TargetSpec
	if ce == nil || ce.Trace == nil || len(ce.Trace.Requests) != 11 || !ce.Trace.Minimal || ce.Accepted != 11 || len(ce.Decisions) != 11 {
		t.Fatalf("counter-example %+v: want a minimal trace of L+1 = 11 requests, all in the window", ce)
	}
	if ce.Found == nil || ce.Found.Accepted != 20 || rep.Repro.Seed != 1 || rep.Redis.Version == "" || rep.ToolVersion == "" {
		t.Errorf("found %+v, seed %d, Redis %q, ratelab %q: want the worst found (20) and what reproduces it", ce.Found, rep.Repro.Seed, rep.Redis.Version, rep.ToolVersion)
	}
	if spec == nil || spec.Script != script || len(spec.ScriptSHA1) != 40 || len(spec.Args) != 3 {
		t.Errorf("target %+v: want the whole target", spec)
	}
	if !strings.Contains(stdout, "11 requests, every one accepted in the window") || !strings.Contains(stdout, "replay it: ratelab verify --replay "+filepath.Join(out, "verify.json")) {
		t.Errorf("table: want every request of the trace and the replay command with its path:\n%s", stdout)
	}
	csv, err := os.ReadFile(filepath.Join(out, "counter-example.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 12 || ce.Trace.CSV != "counter-example.csv" {
		t.Fatalf("counter-example.csv (%v):\n%s", err, csv)
	}
	verifyJSON := filepath.Join(out, "verify.json")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"the same target", nil, exitFail, "violated again"},
		{"a corrected target", append([]string{"--script", testdataScript("sliding-log.lua")}, slidingArgs...), exitOK, ""},
		{"a built-in that still fails", []string{"--algorithm", "fixed-window"}, exitFail, "violated again"},
		{"limits given", []string{"--limit", "5"}, exitUsage, "--replay takes the limits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ratelab(t, append([]string{"verify", "--replay", verifyJSON, "--redis", redisURL, "--timeout", "5s"}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q\n%s", code, stderr, c.code, c.want, stdout)
			}
		})
	}
	// the traffic file replays with run --traffic: L+1 in one window
	code, stdout, stderr = ratelab(t, "run", "--traffic", filepath.Join(out, "counter-example.csv"), "--algorithms", "fixed-window",
		"--limit", "10", "--window", "300ms", "--redis", redisURL, "--timeout", "5s", "--out", filepath.Join(dir, "run"))
	if code != exitOK || !strings.Contains(stdout, "11 accepted within one 300ms window") {
		t.Errorf("run --traffic: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// the script changed since: refused
	if err := os.WriteFile(script, append(src, []byte("\n-- edited\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = ratelab(t, "verify", "--replay", verifyJSON, "--redis", redisURL)
	if code != exitUsage || !strings.Contains(stderr, "has changed since it was verified") {
		t.Errorf("changed script: exit %d, stderr %q", code, stderr)
	}
	// a verify.json that holds: nothing to replay
	held := filepath.Join(dir, "held")
	if code, _, stderr := ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "300ms", "--redis", redisURL, "--timeout", "5s", "--out", held); code != exitOK {
		t.Fatalf("sliding-log: exit %d %s", code, stderr)
	}
	code, _, stderr = ratelab(t, "verify", "--replay", filepath.Join(held, "verify.json"), "--redis", redisURL)
	if code != exitUsage || !strings.Contains(stderr, "nothing to replay") {
		t.Errorf("a report that holds: exit %d, stderr %q", code, stderr)
	}
}

// Liveness by default: a limiter that accepts nothing, or one request per
// window, exits 1 STARVED; --min-fidelity 0 turns the check off; the exact
// sliding log and a shaping GCRA pass.
func TestVerifyStarvedByDefault(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	redisURL := "redis://" + srv.Info.Addr
	// --timeout 5s: under load a call past the default 500ms is an error (exit 2), not what these pin;
	// --connect-timeout 30s likewise: at load average ~15 one connect got no answer within the
	// default 3s (exit 2, "cannot reach Redis ... (the connect timeout)") before any trial ran
	window := []string{"--limit", "20", "--window", "500ms", "--redis", redisURL, "--timeout", "5s", "--connect-timeout", "30s"}
	gcraArgs := []string{"--arg", "{now_us}", "--arg", "{window_us}", "--arg", "{limit}"}
	for _, c := range []struct {
		file  string
		args  []string
		extra []string
		code  int
		want  string
	}{
		{"accepts-nothing.lua", slidingArgs, nil, exitFail, "STARVED"},
		{"one-per-window.lua", slidingArgs, nil, exitFail, "STARVED"},
		{"accepts-nothing.lua", slidingArgs, []string{"--min-fidelity", "0"}, exitOK, "HOLDS"},
		{"sliding-log.lua", slidingArgs, nil, exitOK, "HOLDS"},
		{"gcra.lua", gcraArgs, nil, exitOK, "HOLDS"},
	} {
		t.Run(c.file+strings.Join(c.extra, " "), func(t *testing.T) {
			args := append(append(append([]string{"verify", "--script", testdataScript(c.file)}, c.args...), window...), c.extra...)
			code, stdout, stderr := ratelab(t, args...)
			if code != c.code || !strings.Contains(stdout, c.want) {
				t.Errorf("exit %d; want %d and %s\n%s\n%s", code, c.code, c.want, stdout, stderr)
			}
		})
	}
}

// --setup and setup: in ratelab.yaml reach the script through the one
// builder: a limiter whose rate is written by its set-up holds with it and
// is violated without it (it admits everything).
func TestVerifySetupFlag(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	redisURL := "redis://" + srv.Info.Addr
	dir := t.TempDir()
	abs := func(name string) string {
		p, err := filepath.Abs(testdataScript(name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	keys := []string{"--key", "{key}", "--key", "{key}:cfg"}
	base := append(append([]string{"verify", "--script", testdataScript("rate-from-hash.lua")}, keys...), slidingArgs...)
	base = append(base, "--limit", "20", "--window", "500ms", "--redis", redisURL, "--timeout", "5s")
	yaml := filepath.Join(dir, "ratelab.yaml")
	if err := os.WriteFile(yaml, []byte("script: "+abs("rate-from-hash.lua")+"\nsetup: "+abs("set-rate.lua")+
		"\nkeys: ['{key}', '{key}:cfg']\nargs: ['{now_us}', '{window_us}', '{limit}', '{request_id}']\nlimits: [{limit: 20, window: 500ms}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"without set-up", base, exitFail},
		{"--setup", append(slicesClone(base), "--setup", testdataScript("set-rate.lua"), "--out", out), exitOK},
		{"setup: in ratelab.yaml", []string{"verify", "--config", yaml, "--redis", redisURL, "--timeout", "5s"}, exitOK},
		{"--setup without a script", []string{"verify", "--algorithm", "sliding-log", "--setup", testdataScript("set-rate.lua"), "--limit", "5", "--window", "1s"}, exitUsage},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ratelab(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s\n%s", code, c.code, stdout, stderr)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(out, "verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep measure.VerifyReport
	if err := json.Unmarshal(b, &rep); err != nil || rep.TargetSpec == nil || rep.TargetSpec.SetupSHA1 == "" || len(rep.TargetSpec.Keys) != 2 {
		t.Errorf("verify.json's target %+v (%v): want the set-up recorded", rep.TargetSpec, err)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }
