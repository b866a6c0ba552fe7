package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// The contract command lines: exit 0 when the property holds, 1 with a
// counter-example when it does not, 2 for usage and environment errors.
func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notLua := write("notlua.lua", "this is not lua (")
	shape := write("shape.lua", "return 'yes'")
	good := filepath.Join("..", "..", "harness", "verify", "testdata", "sliding-log.lua")
	window := []string{"--limit", "10", "--window", "300ms", "--redis", "exec"}

	code, stdout, stderr := ratelab(t, append([]string{"verify", "--algorithm", "sliding-log"}, window...)...)
	if code != exitOK || !strings.Contains(stdout, "HOLDS") {
		t.Errorf("sliding-log: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = ratelab(t, append([]string{"verify", "--algorithm", "fixed-window", "--format", "json"}, window...)...)
	var rep measure.VerifyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	// the worst found (2L), shrunk to L+1
	if ce := rep.CounterExample; code != exitFail || rep.Verdict != measure.Violated || ce == nil || ce.Found == nil || ce.Found.Accepted != 20 || ce.Accepted != 11 {
		t.Errorf("fixed-window: exit %d verdict %s counter-example %+v; stderr %s", code, rep.Verdict, rep.CounterExample, stderr)
	}
	code, stdout, _ = ratelab(t, append([]string{"verify", "--script", good,
		"--arg", "{now_us}", "--arg", "{window_us}", "--arg", "{limit}", "--arg", "{request_id}"}, window...)...)
	if code != exitOK {
		t.Errorf("correct script: exit %d\n%s", code, stdout)
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"verify", "--limit", "1", "--window", "1s"}, "give exactly one target: an algorithm, a script, a function library, an HTTP endpoint, an exec adapter or a target file (got 0)"},
		{"two targets", []string{"verify", "--algorithm", "sliding-log", "--http", "http://x", "--limit", "1", "--window", "1s"}, "exactly one target"},
		{"no limit", []string{"verify", "--algorithm", "sliding-log", "--window", "1s"}, "--limit: must be >= 1, got 0 (it is required)"},
		{"no window", []string{"verify", "--algorithm", "sliding-log", "--limit", "5"}, "--window: must be >= 1ms, got 0s (it is required)"},
		{"unknown algorithm", []string{"verify", "--algorithm", "leaky", "--limit", "5", "--window", "1s"}, `--algorithm: unknown algorithm "leaky"`},
		{"arg without script", []string{"verify", "--algorithm", "sliding-log", "--arg", "{now_us}", "--limit", "5", "--window", "1s"}, "--arg: goes only with a script"},
		{"missing script", []string{"verify", "--script", filepath.Join(dir, "nope.lua"), "--limit", "5", "--window", "1s"}, "--script: open"},
		{"unknown placeholder", append([]string{"verify", "--script", good, "--arg", "{nwo_us}"}, window...), "unknown placeholder {nwo_us}"},
		{"not lua", append([]string{"verify", "--script", notLua}, window...), "Error compiling script"},
		{"wrong reply", append([]string{"verify", "--script", shape}, window...), "script reply has the wrong shape"},
		{"bad http", []string{"verify", "--http", "ftp://x", "--limit", "5", "--window", "1s"}, "--http: not an http://"},
		{"two limits for one-limit algorithm", []string{"verify", "--algorithm", "sliding-log", "--limit", "10/1s", "--limit", "120/1m"},
			"--limit: sliding-log enforces one limit, and 2 were given (10 per 1s, 120 per 1m): several at once need bucketed-hash"},
		{"bad pair", []string{"verify", "--algorithm", "bucketed-hash", "--limit", "10/1s", "--limit", "0/1m"}, `--limit: "0/1m": limit: must be >= 1, got 0`},
		{"bad skew", []string{"verify", "--algorithm", "sliding-log", "--limit", "5", "--window", "1s", "--skew", "2s"}, "--skew: must be in 0..window/2"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := ratelab(t, c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
		})
	}
}

// verify's flags make its Plan without touching Redis: a zero --timeout,
// --max-outage or --clients refused rather than defaulted, --budget 0 no
// search, the timeout adapted unless given, and --window alone a limit
// without a count, which --limit is required for.
func TestVerifyConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		args  []string
		want  string // the error; "" for none
		check func(verify.Config) bool
	}{
		{"defaults", []string{"--limit", "10", "--window", "2s"}, "", func(cfg verify.Config) bool {
			return cfg.NoDefaults && cfg.AdaptTimeout && cfg.Budget == verify.DefaultBudget &&
				len(cfg.Limits) == 1 && cfg.Limits[0] == limit.Limit{Count: 10, Window: 2 * time.Second}
		}},
		{"no search", []string{"--limit", "10/1s", "--budget", "0"}, "", func(cfg verify.Config) bool { return cfg.Budget == -1 }},
		{"timeout given", []string{"--limit", "10/1s", "--timeout", "1s"}, "", func(cfg verify.Config) bool {
			return !cfg.AdaptTimeout && cfg.Timeout == time.Second
		}},
		{"no count", []string{"--window", "1s"}, "--limit: must be >= 1, got 0 (it is required)", nil},
		{"no clients", []string{"--limit", "10/1s", "--clients", "0"}, "--clients: must be in 1..", nil},
	} {
		f := &verifyFlags{}
		cmd := f.command(io.Discard, io.Discard)
		if err := cmd.ParseFlags(append([]string{"--algorithm", "sliding-log"}, c.args...)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := f.target.load(cmd, nil); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, err := f.config(cmd)
		switch {
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && !c.check(p.Config):
			t.Errorf("%s: got %+v", c.name, p.Config)
		}
	}
}
