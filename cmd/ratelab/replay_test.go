package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// maskedRows are a run's rows as JSON with what differs between two runs
// of the same schedule zeroed: latency, wall time, and memory (a sorted
// set's skiplist nodes take random heights, so a sliding log's MEMORY
// USAGE differs a little from run to run); memory is returned apart.
func maskedRows(t *testing.T, stdout string) (string, []int64) {
	t.Helper()
	var res measure.Results
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	var mem []int64
	for i := range res.Results {
		r := &res.Results[i]
		r.P50US, r.P99US, r.P999US, r.MaxUS, r.DurationMS = 0, 0, 0, 0, 0
		mem = append(mem, r.MemoryBytes)
		r.MemoryBytes = 0
	}
	data, _ := json.MarshalIndent(struct {
		Scenarios []string
		Notes     []string
		Rows      []measure.Row
	}{res.Config.Scenarios, res.Notes, res.Results}, "", " ")
	return string(data), mem
}

// The four built-ins shipped as YAML files give the Go scenarios' results,
// byte for byte once latency and wall time are masked.
func TestScenarioFileRunsLikeTheBuiltin(t *testing.T) {
	t.Parallel()
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "..", "scenarios", "builtin", name+".yaml")
			code, goOut, stderr := ratelab(t, "run", "--redis", "exec", "--scenarios", name, "--format", "json", "--out", t.TempDir())
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			code, yamlOut, stderr := ratelab(t, "run", "--redis", "exec", "--scenario-file", file, "--format", "json", "--out", t.TempDir())
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			a, am := maskedRows(t, goOut)
			b, bm := maskedRows(t, yamlOut)
			if a != b {
				t.Errorf("--scenario-file %s differs from --scenarios %s:\n%s\n---\n%s", file, name, b, a)
			}
			for i := range am {
				if d := am[i] - bm[i]; d*100 > am[i] || -d*100 > am[i] {
					t.Errorf("row %d: memory %d and %d differ by more than 1%%", i, am[i], bm[i])
				}
			}
		})
	}
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// run --traffic end to end: a CSV with a malformed line replays, the line
// is named on stderr and in results.json, and the run directory has the
// per-key table and the trailing-window plot.
func TestRunTraffic(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("ts,user,weight\n")
	for i := range 300 {
		fmt.Fprintf(&b, "%d,u%d,%d\n", 1_700_000_000_000+int64(i)*97, i%7, 1+i%3)
		if i == 100 {
			b.WriteString("yesterday,u1,1\n")
		}
	}
	path := writeFile(t, "requests.csv", b.String())
	out := t.TempDir()
	code, stdout, stderr := ratelab(t, "run", "--redis", "exec", "--traffic", path, "--time-field", "ts", "--time-unit", "ms",
		"--key-field", "user", "--cost-field", "weight", "--limit", "10", "--window", "2s", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// all six algorithms replay, gcra included (its TIME answers the virtual clock)
	if !strings.Contains(stderr, path+": line 103: ") || !strings.Contains(stderr, "against 6 algorithms") || strings.Contains(stderr, "was not run") {
		t.Errorf("stderr: %s", stderr)
	}
	if !strings.Contains(stdout, "per key:") || !strings.Contains(stdout, "malformed: line 103") {
		t.Errorf("stdout: %s", stdout)
	}
	res, err := measure.ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if tr := res.Traffic; tr == nil || tr.Records != 300 || tr.Malformed != 1 || tr.Keys != 7 || len(tr.Examples) != 1 || tr.Examples[0].Line != 103 {
		t.Errorf("traffic %+v", res.Traffic)
	}
	for _, r := range res.Results {
		if r.PerKey == nil || r.PerKey.Keys != 7 || r.Offered != 600 || len(r.Trailing) == 0 {
			t.Errorf("%s: offered %d per key %+v", r.Algorithm, r.Offered, r.PerKey)
		}
	}
	html, _ := os.ReadFile(filepath.Join(out, "report.html"))
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(html), "Per key") || !strings.Contains(string(md), "![trailing-traffic](trailing-traffic.png)") {
		t.Error("report.html or report.md lacks the per-key table or the trailing plot")
	}
	// the results re-render
	if code, _, stderr := ratelab(t, "report", out); code != exitOK {
		t.Errorf("report: exit %d: %s", code, stderr)
	}
}

// Bad traffic input: exit 2 naming the flag and the file; no results left.
func TestRunTrafficBadInput(t *testing.T) {
	t.Parallel()
	empty := writeFile(t, "empty.csv", "")
	blank := writeFile(t, "blank.csv", "\n \n")
	junk := writeFile(t, "junk.csv", "timestamp,key\nnope,a\nnever,b\n")
	bad := writeFile(t, "bad.csv", "timestamp,key\n1700000000,a\nnope,a\n1700000001,b\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--traffic", "/nonexistent/t.csv", "--limit", "5", "--window", "1s"}, "--traffic: open /nonexistent/t.csv"},
		{"empty file", []string{"--traffic", empty, "--limit", "5", "--window", "1s"}, "--traffic: " + empty + ": traffic file is empty"},
		{"blank lines", []string{"--traffic", blank, "--limit", "5", "--window", "1s"}, "--traffic: " + blank + ": traffic file is empty"},
		{"no valid record", []string{"--traffic", junk, "--limit", "5", "--window", "1s"}, "--traffic: " + junk + ": traffic file has no valid record"},
		{"strict", []string{"--traffic", bad, "--limit", "5", "--window", "1s", "--strict"}, "line 3: bad time"},
		{"directory", []string{"--traffic", t.TempDir(), "--limit", "5", "--window", "1s"}, "a directory, not a regular file"},
		{"no limit", []string{"--traffic", bad, "--window", "1s"}, "--limit: required with traffic"},
		{"no window", []string{"--traffic", bad, "--limit", "5"}, "--window: required with traffic"},
		{"with scenarios", []string{"--traffic", bad, "--limit", "5", "--window", "1s", "--scenarios", "steady"}, "--traffic: replays the file alone"},
		{"real clock", []string{"--traffic", bad, "--limit", "5", "--window", "1s", "--clock", "redis"}, "--clock: traffic replays in virtual time only"},
		{"bad format", []string{"--traffic", bad, "--limit", "5", "--window", "1s", "--traffic-format", "xml"}, `--traffic-format: unknown format "xml"`},
		{"bad unit", []string{"--traffic", bad, "--limit", "5", "--window", "1s", "--time-unit", "days"}, `--time-unit: unknown unit "days"`},
		{"unknown key field", []string{"--traffic", bad, "--limit", "5", "--window", "1s", "--key-field", "user"}, "--traffic: " + bad},
		{"traffic flag alone", []string{"--key-field", "user"}, "--key-field: only with --traffic"},
		{"bad scenario file", []string{"--scenario-file", empty}, "--scenario-file: "},
		{"scenario twice", []string{"--scenarios", "steady", "--scenario-file", "../../scenarios/builtin/steady.yaml"}, "--scenario-file: scenario steady would run twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"run", "--redis", "exec", "--out", out}, c.args...)
			code, _, stderr := ratelab(t, args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was left behind", out)
			}
		})
	}
}
