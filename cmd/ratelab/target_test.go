package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

// examples is where the README's worked examples live.
var examples = filepath.Join("..", "..", "docs", "examples")

// The README's examples ("Verify a limiter you did not write"): one script
// per reply shape and key shape, verified exactly as written, with the
// honest verdict. The commands are the README's, but for --redis.
func TestVerifyPublishedShapes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	redisURL := "redis://" + srv.Info.Addr
	cases := []struct {
		name string
		args []string
		code int
		want string // in stdout
	}{
		// nil denial: a fixed window from the first hit (it reads no clock: virtual time through its key's TTL)
		{"nil denial", []string{"--script", "first-hit-window.lua", "--arg", "{window_ms}", "--arg", "{limit}",
			"--allowed", "reply != nil"}, exitFail, "VIOLATED"},
		// a count compared with the limit: a true sliding log
		{"count <= limit", []string{"--script", "sliding-log-count.lua", "--arg", "{now_us}", "--arg", "{window_us}", "--arg", "{limit}",
			"--arg", "{request_id}", "--arg", "{cost}", "--allowed", "reply <= limit"}, exitOK, "HOLDS"},
		// remaining >= 0, two keys, Redis TIME read by the script: a bucket refilled per interval
		{"remaining >= 0", []string{"--script", "interval-bucket.lua", "--key", "{key}", "--key", "{key}.last",
			"--arg", "{limit}", "--arg", "{window_us}", "--arg", "{cost}", "--allowed", "reply >= 0"}, exitFail, "VIOLATED"},
		// two allowed codes, keys built from the clock: a sliding-window counter
		{"1 or 2, clock keys", []string{"--script", "window-counter.lua", "--key", "{key}:{floor(now_ms / window_ms)}",
			"--key", "{key}:{floor(now_ms / window_ms) - 1}", "--arg", "{now_ms}", "--arg", "{window_ms}", "--arg", "{limit}",
			"--allowed", "reply in [1, 2]"}, exitFail, "VIOLATED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"verify"}, c.args...)
			args[2] = filepath.Join(examples, args[2])
			args = append(args, "--limit", "10", "--window", "1s", "--redis", redisURL)
			start := time.Now()
			code, stdout, stderr := ratelab(t, args...)
			t.Logf("%s: exit %d in %s", c.name, code, time.Since(start).Round(time.Millisecond))
			if code != c.code || !strings.Contains(stdout, c.want) || strings.Contains(stdout, "errors") && !strings.Contains(stdout, " 0 errors") {
				t.Errorf("exit %d, want %d with %s\n%s\n%s", code, c.code, c.want, stdout, stderr)
			}
		})
	}
}

// A reply the predicate cannot judge stops verify at once: exit 2, the
// reply and the predicate shown, in under 100 ms from the start of the
// command (Redis already running), never through the outage path.
func TestVerifyBadReplyStopsAtOnce(t *testing.T) {
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	// allowed on a key's first call (the probe passes), then a Lua false
	script := filepath.Join(dir, "false-denial.lua")
	src := "if redis.call('INCR', KEYS[1]) > 1 then return false end\nredis.call('PEXPIRE', KEYS[1], 60000)\nreturn 1\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// the default predicate meets nil on a trial's second call; an
	// expression that indexes an integer fails on the probe
	for _, extra := range [][]string{nil, {"--allowed", "reply[1] == 1"}} {
		args := append([]string{"verify", "--script", script, "--arg", "{now_us}", "--limit", "10", "--window", "1s",
			"--redis", "redis://" + srv.Info.Addr}, extra...)
		start := time.Now()
		code, _, stderr := ratelab(t, args...)
		took := time.Since(start)
		t.Logf("%v: exit %d in %s: %s", extra, code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
		if code != exitUsage || !strings.Contains(stderr, "on reply ") || strings.Contains(stderr, "kept failing") {
			t.Errorf("exit %d, stderr %q; want exit 2 showing the reply", code, stderr)
		}
		// measured 11-37 ms; the bound tells "at once" from the outage path
		// (--max-outage, 2 s) without failing on a loaded CI machine
		if took > time.Second {
			t.Errorf("took %s, want it at once (measured 11-37 ms here), not through the outage path", took)
		}
	}
}

// A target file describes the target once: verify --config; its schema is
// checked, errors name the field and the line.
func TestVerifyConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	abs, err := filepath.Abs(filepath.Join(examples, "window-counter.lua"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("ratelab.yaml", `# a sliding-window counter, keys named by the clock
script: `+abs+`
keys:
  - "{key}:{floor(now_ms / window_ms)}"
  - "{key}:{floor(now_ms / window_ms) - 1}"
args: ["{now_ms}", "{window_ms}", "{limit}"]
allowed: reply in [1, 2]
limits:
  - {limit: 10, window: 1s}
`)
	code, stdout, stderr := ratelab(t, "verify", "--config", good, "--redis", "exec")
	if code != exitFail || !strings.Contains(stdout, "window-counter.lua — 10 per 1s") || !strings.Contains(stdout, "VIOLATED") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	// several limits in the file build the limiter from all of them (one
	// builder, as with flags): bucketed-hash gets both (and its 100 ms
	// blocks let a burst through at the 1 s limit), sliding-log is refused
	// with the reason rather than built from the first and judged on both
	two := "limits:\n  - {limit: 5, window: 1s}\n  - {limit: 20, window: 1m}\n"
	code, stdout, stderr = ratelab(t, "verify", "--config", write("bucketed.yaml", "algorithm: bucketed-hash\n"+two), "--redis", "exec")
	if code != exitFail || !strings.Contains(stdout, "bucketed-hash — 5 per 1s (precision 100ms), 20 per 1m (precision 6s): VIOLATED") {
		t.Errorf("bucketed-hash with two limits: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = ratelab(t, "verify", "--config", write("sliding.yaml", "algorithm: sliding-log\n"+two), "--redis", "exec")
	if code != exitUsage || !strings.Contains(stderr, "sliding-log enforces one limit, and 2 were given (5 per 1s, 20 per 1m)") {
		t.Errorf("sliding-log with two limits: exit %d, stderr %q; want exit 2 and the reason", code, stderr)
	}
	bad := []struct{ name, text, want string }{
		{"unknown field", "script: x.lua\nallowd: reply == 1\n", "allowd: unknown field (known: name, script, function, fcall, algorithm, http, exec, keys, args, allowed, allowed_when, setup, limits, client_side) (line 2)"},
		{"no target", "args: ['{limit}']\n", "give exactly one of script, function, algorithm, http or exec (line 1)"},
		{"bad key", "script: " + abs + "\nkeys:\n  - '{key}'\n  - 'other:{key}'\n", "keys[2]: template \"other:{key}\" must start with {key}"},
		{"bad template", "script: " + abs + "\nargs: ['{nwo_ms}']\n", "args[1]: template \"{nwo_ms}\", character 1: unknown placeholder {nwo_ms}"},
		{"bad predicate", "script: " + abs + "\nallowed: reply ==\n", "allowed: predicate"},
		{"bad limit", "script: " + abs + "\nlimits:\n  - {limit: 0, window: 1s}\n", "limits[1].limit: must be an integer >= 1, got \"0\" (line 3)"},
		{"missing script", "script: nope.lua\n", "script: open"},
		{"args with algorithm", "algorithm: sliding-log\nargs: ['{limit}']\n", "args: goes with script (line 2)"},
		{"exec and script", "script: " + abs + "\nexec: ./adapter\n", "give exactly one of script, function, algorithm, http or exec (line 1)"},
		{"keys with exec", "exec: ./adapter\nkeys: ['{key}']\n", "keys: goes with script (line 2)"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := ratelab(t, "verify", "--config", write(strings.ReplaceAll(c.name, " ", "-")+".yaml", c.text), "--limit", "5", "--window", "1s")
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
		})
	}
}

// run, capacity and bench take a user's script beside the built-ins,
// named by its file. The server is the test's own, given by URL: run's
// script runs under the guard; capacity and bench need --trust-script.
func TestScriptBesideBuiltins(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	redisURL := "redis://" + srv.Info.Addr
	log := filepath.Join(examples, "sliding-log-count.lua")
	logArgs := []string{"--arg", "{now_us}", "--arg", "{window_us}", "--arg", "{limit}", "--arg", "{request_id}", "--arg", "{cost}", "--allowed", "reply <= limit"}

	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := ratelab(t, append([]string{"run", "--wide", "--scenarios", "boundary-burst", "--script", log, "--redis", redisURL, "--out", out}, logArgs...)...)
	if code != exitOK || strings.Count(stdout, "| boundary-burst |") != 7 || !strings.Contains(stdout, "| sliding-log-count.lua | boundary-burst |") {
		t.Errorf("run: exit %d, want six built-ins and the script\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{"report.html", "report.md", "results.json", "ratio.svg", "timeline-boundary-burst.svg"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || !strings.Contains(string(b), "sliding-log-count.lua") {
			t.Errorf("%s does not name the script (%v)", f, err)
		}
	}

	code, stdout, stderr = ratelab(t, append([]string{"capacity", "--algorithms", "sliding-log", "--limits", "10", "--keys", "100",
		"--script", log, "--trust-script", "--redis", redisURL, "--out", filepath.Join(t.TempDir(), "cap")}, logArgs...)...)
	if code != exitOK || !strings.Contains(stdout, "| sliding-log-count.lua |    10 |") {
		t.Errorf("capacity: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = ratelab(t, "bench", "--algorithms", "fixed-window", "--duration", "300ms", "--script", filepath.Join(examples, "first-hit-window.lua"),
		"--arg", "{window_ms}", "--arg", "{limit}", "--allowed", "reply != nil", "--trust-script", "--redis", redisURL, "--out", filepath.Join(t.TempDir(), "bench"))
	if code != exitOK || !strings.Contains(stdout, "| first-hit-window.lua | allow |") || !strings.Contains(stdout, "| first-hit-window.lua | deny  |") {
		t.Errorf("bench: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// bench replays one call: a script that takes the time from ARGV is refused, naming the template
	code, _, stderr = ratelab(t, append([]string{"bench", "--script", log, "--redis", redisURL}, logArgs...)...)
	if code != exitUsage || !strings.Contains(stderr, `--script: sliding-log-count.lua: its template "{now_us}" reads the clock`) {
		t.Errorf("bench with a clock argument: exit %d, %s", code, stderr)
	}
	// a key template outside the request key, named with its flag
	code, _, stderr = ratelab(t, "run", "--script", log, "--key", "rl:{key}", "--redis", redisURL)
	if code != exitUsage || !strings.Contains(stderr, `--key: KEYS[1]: template "rl:{key}" must start with {key}`) {
		t.Errorf("bad --key: exit %d, %s", code, stderr)
	}
}
