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

// twin is a script of harness/verify/testdata and how verify calls it.
func twin(file string, args ...string) []string {
	out := []string{"verify", "--script", filepath.Join("..", "..", "harness", "verify", "testdata", file)}
	for _, a := range args {
		out = append(out, "--arg", a)
	}
	return out
}

// readVerifyJSON reads dir's verify.json.
func readVerifyJSON(t *testing.T, dir string) *measure.VerifyReport {
	t.Helper()
	r, err := measure.ReadVerify(filepath.Join(dir, "verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A strict GCRA (burst 1) and a fixed window whose expiry every hit
// pushes out never exceed the limit and starve traffic: exit 1, with the
// summary saying that safety held and naming the cause of the starvation
// (read from the decisions), in the table, verify.json and JUnit; --gate
// safety passes them (exit 0), --gate liveness fails them, a bad gate is a
// usage error naming the flag.
func TestVerifySafetyAndLivenessApart(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	url := "redis://" + srv.Info.Addr
	cases := []struct {
		name   string
		args   []string
		cause  measure.LivenessCause
		detail string
	}{
		{"strict-gcra", append(twin("strict-gcra.lua", "{now_us}", "{window_us}", "{limit}", "{cost}"), "--allowed", "reply[1] == 1"),
			measure.CostAboveBurst, "requests of cost ≥ 2 were never admitted (0 of the "},
		{"push-out", append(twin("pushout-window.lua", "{limit}", "{window_ms}", "{cost}"), "--allowed", "reply[1] == 1"),
			measure.LockOut, "a client sending steadily was denied for "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out, junitFile := filepath.Join(dir, "out"), filepath.Join(dir, "junit.xml")
			args := append(c.args, "--limit", "20", "--window", "1m", "--redis", url)
			code, stdout, stderr := ratelab(t, append(args, "--out", out, "--junit", junitFile)...)
			if code != exitFail {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "safety: HOLDS (max 1.00 in any window); liveness: STARVED — ") ||
				!strings.Contains(strings.Join(strings.Fields(stdout), " "), c.detail) {
				t.Errorf("the summary does not tell safety held and why liveness failed (%q):\n%s", c.detail, stdout)
			}
			r := readVerifyJSON(t, out)
			if r.Safety == nil || r.Safety.Verdict != measure.Holds || r.Safety.MaxRatio > 1 || r.Liveness == nil ||
				r.Liveness.Verdict != measure.Starved || !r.Liveness.Gated || r.Liveness.Cause != c.cause || !strings.HasPrefix(r.Liveness.Detail, c.detail) {
				t.Errorf("verify.json: safety %+v, liveness %+v; want safety holding, liveness starved by %s", r.Safety, r.Liveness, c.cause)
			}
			s := validateJUnitFile(t, junitFile)
			parts := map[string]string{}
			for _, tc := range s.Suites[0].Testcases {
				switch name, _, _ := strings.Cut(tc.Name, " ("); {
				case name != "safety" && name != "liveness":
				case tc.Failure != nil:
					parts[name] = "failure: " + tc.Failure.Message
				default:
					parts[name] = "passed"
				}
			}
			if parts["safety"] != "passed" || !strings.Contains(parts["liveness"], string(c.cause)) && !strings.Contains(parts["liveness"], c.detail) {
				t.Errorf("JUnit parts %q: want safety passed and liveness failed naming its cause", parts)
			}

			if code, _, stderr := ratelab(t, append(args, "--gate", "safety")...); code != exitOK {
				t.Errorf("--gate safety: exit %d, want 0\n%s", code, stderr)
			}
			if code, _, _ := ratelab(t, append(args, "--gate", "liveness", "--format", "json")...); code != exitFail {
				t.Errorf("--gate liveness: exit %d, want 1", code)
			}
		})
	}
	code, _, stderr := ratelab(t, "verify", "--algorithm", "sliding-log", "--limit", "5", "--window", "1s", "--gate", "all", "--redis", url)
	if code != exitUsage || !strings.Contains(stderr, "--gate: ") {
		t.Errorf("--gate all: exit %d, %q; want 2 naming --gate", code, stderr)
	}
}

// A limiter that breaks both of two limits (a counter per limit, each in
// a fixed window): each limit is named with its own ratio and
// counter-example, in the table, verify.json and JUnit.
func TestVerifyEveryLimitItsOwnVerdict(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	dir := t.TempDir()
	out, junitFile := filepath.Join(dir, "out"), filepath.Join(dir, "junit.xml")
	args := append(twin("two-fixed-windows.lua", "{now_ms}", "10", "60000", "100", "3600000", "{cost}"),
		"--limit", "10/1m", "--limit", "100/1h", "--redis", "redis://"+srv.Info.Addr, "--out", out, "--junit", junitFile)
	code, stdout, stderr := ratelab(t, args...)
	if code != exitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"  10 per 1m: VIOLATED 2.00x (", "  100 per 1h: VIOLATED 2.00x (", "\n10 per 1m:\n+", "\n100 per 1h:\n+",
		"COUNTER-EXAMPLE of 10 per 1m (VIOLATED)", "COUNTER-EXAMPLE of 100 per 1h (VIOLATED)", "safety: VIOLATED (2.00x the limit in one window)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, stdout)
		}
	}
	r := readVerifyJSON(t, out)
	if len(r.PerLimit) != 2 {
		t.Fatalf("verify.json: %d per-limit verdicts, want 2", len(r.PerLimit))
	}
	for i, want := range []struct {
		limit  string
		window int64
	}{{"10 per 1m", 60_000}, {"100 per 1h", 3_600_000}} {
		l := r.PerLimit[i]
		ce := l.CounterExample
		if l.Limit != want.limit || l.Verdict != measure.Violated || l.MaxRatio < 2 || ce == nil || ce.WindowMS != want.window ||
			ce.Found == nil || ce.Found.Ratio < 2 || len(l.Families) != len(r.Families) {
			t.Errorf("per_limit[%d] = %s %s %.2f, counter-example %+v; want %s violated at 2.00x with its own counter-example", i, l.Limit, l.Verdict, l.MaxRatio, ce, want.limit)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw["per_limit"] == nil || raw["safety"] == nil || raw["liveness"] == nil {
		t.Errorf("verify.json lacks per_limit, safety or liveness (%v)", err)
	}
	s := validateJUnitFile(t, junitFile)
	failed := map[string]bool{}
	for _, tc := range s.Suites[0].Testcases {
		if tc.Failure != nil && strings.HasPrefix(tc.Name, "boundary") || tc.Failure != nil && strings.HasPrefix(tc.Name, "greedy") {
			failed[tc.Name] = strings.Contains(tc.Failure.Message, "accepted within") || strings.Contains(tc.Failure.Message, "x the limit")
		}
	}
	if !failed["boundary (10 per 1m)"] || !failed["greedy (100 per 1h)"] {
		t.Errorf("JUnit failures %v: want boundary (10 per 1m) and greedy (100 per 1h), each with its ratio", failed)
	}
}

// verify --help fits a screen before its flags, and names --gate there.
func TestVerifyHelpFitsAScreen(t *testing.T) {
	code, stdout, _ := ratelab(t, "verify", "--help")
	before, _, found := strings.Cut(stdout, "\nFlags:")
	if code != exitOK || !found {
		t.Fatalf("exit %d, no flag list:\n%s", code, stdout)
	}
	if n := strings.Count(before, "\n") + 1; n >= 60 || !strings.Contains(before, "--gate safety") || !strings.Contains(before, "ratelab help verify-families") {
		t.Errorf("%d lines before the flags (want under 60), naming --gate and the help topic:\n%s", n, before)
	}
	if code, stdout, _ := ratelab(t, "help", "verify-families"); code != exitOK || !strings.Contains(stdout, "greedy adversary") {
		t.Errorf("help verify-families: exit %d:\n%s", code, stdout)
	}
}
