package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

// TestClientSide drives client-side limiters through the command line on a
// Redis given by URL (a user's Redis: scripts run under the guard user):
// the naive built-in's race and its interleaving, the same again for the
// same seed, a twin verified atomically and client-side, the target file's
// client_side, run's concurrent-burst, and capacity and bench refusing.
func TestClientSide(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	url := "redis://" + srv.Info.Addr
	twins := filepath.Join("..", "..", "custom", "clientside", "testdata")
	logArgs := []string{"--arg", "{limit}", "--arg", "{window_us}", "--arg", "{now_us}", "--arg", "{request_id}"}
	verify := func(args ...string) (int, string, string) {
		t.Helper()
		args = append([]string{"verify", "--limit", "20", "--window", "1m", "--redis", url, "--out", t.TempDir()}, args...)
		return ratelab(t, args...)
	}

	// the seeds' naive log: violated by a race, the interleaving listed
	code, out, stderr := verify("--algorithm", "sliding-log-naive", "--seed", "3")
	if code != exitFail || !strings.Contains(out, "family race") || !strings.Contains(out, "interleaving (") || !strings.Contains(out, "ZCARD {user} -> 19") {
		t.Fatalf("naive: exit %d, want %d with a race interleaving where a client reads 19:\n%s%s", code, exitFail, out, stderr)
	}
	// replayed: the same seed, the same interleaving (request ids aside), exit 1 again
	ids := regexp.MustCompile(`[0-9a-f]+-[0-9]+:1`)
	steps := func(out string) string {
		_, after, _ := strings.Cut(out, "interleaving (")
		after, _, _ = strings.Cut(after, "\n  trace:") // its paths name each run's own --out
		return ids.ReplaceAllString(after, "ID")
	}
	code2, out2, _ := verify("--algorithm", "sliding-log-naive", "--seed", "3")
	if code2 != exitFail || steps(out2) != steps(out) {
		t.Errorf("the same seed again: exit %d, interleaving\n%s\nwant exit %d and\n%s", code2, steps(out2), exitFail, steps(out))
	}

	// one correct atomic script, violated client-side
	script := filepath.Join(twins, "check_then_act.lua")
	if code, out, stderr := verify(append([]string{"--script", script}, logArgs...)...); code != exitOK {
		t.Errorf("check_then_act atomically: exit %d, want %d:\n%s%s", code, exitOK, out, stderr)
	}
	if code, out, stderr := verify(append([]string{"--script", script, "--client-side"}, logArgs...)...); code != exitFail || !strings.Contains(out, "client-side: VIOLATED") {
		t.Errorf("check_then_act client-side: exit %d, want %d:\n%s%s", code, exitFail, out, stderr)
	}

	// a target file: client_side: true
	dir := t.TempDir()
	abs, _ := filepath.Abs(filepath.Join(twins, "add_then_check.lua"))
	cfg := filepath.Join(dir, "ratelab.yaml")
	yaml := "script: " + abs + "\nclient_side: true\nargs: ['{limit}', '{window_us}', '{now_us}', '{request_id}']\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := verify("--config", cfg); code != exitOK || !strings.Contains(out, "| race ") {
		t.Errorf("add_then_check from a target file: exit %d, want %d with a race family:\n%s%s", code, exitOK, out, stderr)
	}

	// run: the script 1.00, the naive log over
	code, out, stderr = ratelab(t, "run", "--wide", "--algorithms", "sliding-log,sliding-log-naive", "--scenarios", "concurrent-burst", "--redis", url, "--out", t.TempDir())
	row := regexp.MustCompile(`\| (sliding-log(?:-naive)?) +\| concurrent-burst .*?\| +(\d+\.\d\d) \|`)
	ratios := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(out, -1) {
		ratios[m[1]] = m[2]
	}
	if code != exitOK || ratios["sliding-log"] != "1.00" || ratios["sliding-log-naive"] <= "1.00" {
		t.Errorf("run concurrent-burst: exit %d, ratios %v; want sliding-log 1.00 and the naive one above:\n%s%s", code, ratios, out, stderr)
	}

	// capacity and bench: atomic only, with the reason
	for _, args := range [][]string{
		{"capacity", "--algorithms", "sliding-log-naive"},
		{"bench", "--client-side", "--script", script},
	} {
		code, _, stderr := ratelab(t, append(args, "--redis", url, "--out", t.TempDir())...)
		if code != exitUsage || !strings.Contains(stderr, "atomic scripts only") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and the reason", args, code, stderr, exitUsage)
		}
	}
}
