package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/")

// TestGolden pins what `ratelab run` and `ratelab verify` print on stdout,
// and their exit codes, so a refactor can show it changes nothing. Every
// case runs in virtual time against one real redis-server; what still
// varies from run to run (wall-clock latencies and durations, the run id,
// the server's address) is masked before comparing, never skipped.
// Rewrite with: go test ./cmd/ratelab/ -run Golden -update
func TestGolden(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	redisURL := "redis://" + srv.Info.Addr

	// A window of 1h, not seconds: the scripts' keys expire in real time
	// (PEXPIRE of about a window; a reservoir key after window/limit) and
	// memory is read after the last job, so with --window 2s a loaded machine
	// saw memory and keys drop (600 B to 240 B or 0) as keys expired. 1h is
	// also above verify's --real-time-max (1m), so verify skips its real-time
	// families, whose verdicts follow the load (fixed-window's idle-gaps
	// flipped between 2.00 violated and 1.00 holds across runs at 2s).
	// --timeout 5s: under load a call past the default 500ms counts as
	// failed in run and stops verify; neither is what these tests pin.
	runArgs := []string{"run", "--scenarios", "boundary-burst,steady,overload", "--limit", "20", "--window", "1h", "--timeout", "5s"}
	verifyArgs := []string{"--limit", "20", "--window", "1h", "--timeout", "5s"}
	cases := []struct {
		name string
		args []string
		mask func(t *testing.T, stdout string) string
	}{
		// the scenario's own limit and window (50 per 10s) and the table
		// format; its keys live about 10s, past a run of a second or so
		{"run-default", []string{"run", "--scenarios", "boundary-burst", "--timeout", "5s"}, maskPipeTable},
		{"run-table", append(slices.Clip(runArgs), "--format", "table"), maskPipeTable},
		{"run-wide", append(slices.Clip(runArgs), "--wide"), maskPipeTable},
		{"run-markdown", append(slices.Clip(runArgs), "--format", "markdown"), maskPipeTable},
		{"run-json", append(slices.Clip(runArgs), "--format", "json"), maskRunJSON},
		{"run-csv", append(slices.Clip(runArgs), "--format", "csv"), maskRunCSV},
		{"verify-sliding-log-table", append([]string{"verify", "--algorithm", "sliding-log", "--format", "table"}, verifyArgs...), maskVerifyTable},
		{"verify-sliding-log-json", append([]string{"verify", "--algorithm", "sliding-log", "--format", "json"}, verifyArgs...), maskVerifyJSON},
		{"verify-fixed-window-table", append([]string{"verify", "--algorithm", "fixed-window", "--format", "table"}, verifyArgs...), maskVerifyTable},
		// a fixed window from the first hit (a script that reads no clock):
		// times from the first request, and every request of the trace, the
		// first hit that opened the window with the rest
		{"verify-first-hit-table", append([]string{"verify", "--script", "../../harness/verify/testdata/fw-first-hit.lua",
			"--arg", "{limit}", "--arg", "{window_ms}", "--format", "table"}, verifyArgs...), maskVerifyTable},
		// the help: a screen before the flags, the long form a topic of its own
		{"help-verify", []string{"verify", "--help"}, asPrinted},
		{"help-verify-families", []string{"help", "verify-families"}, asPrinted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			args := append(slices.Clip(c.args), "--redis", redisURL, "--out", out)
			code, stdout, stderr := ratelab(t, args...)
			got := fmt.Sprintf("exit: %d\n%s", code, c.mask(t, maskOut(stdout, out)))
			path := filepath.Join("testdata", "golden", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (create it with: go test ./cmd/ratelab/ -run Golden -update)", err)
			}
			if got != string(want) {
				t.Errorf("ratelab %s: stdout differs from %s (- golden, + got; rewrite with -update):\n%s\nstderr:\n%s",
					strings.Join(c.args, " "), path, diffMiddle(string(want), got), stderr)
			}
		})
	}
}

// maskOut names the --out folder out "<out>" in s.
func maskOut(s, out string) string {
	return strings.ReplaceAll(s, out, "<out>")
}

// asPrinted masks nothing: the output does not vary.
func asPrinted(_ *testing.T, s string) string { return s }

// latencyCell is a latency value in a pipe table: a bare integer.
var latencyCell = regexp.MustCompile(`^\s*\d+\s*$`)

// maskPipeTable masks the latency columns (header ending in "µs") of the
// table and markdown formats, keeping each cell's width. Latencies are the
// wall-clock time of each Redis call.
func maskPipeTable(t *testing.T, s string) string {
	lines := strings.Split(s, "\n")
	var cols []int // latency columns of the current table, by "|" field
	for i, line := range lines {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		if slices.ContainsFunc(cells, func(c string) bool { return strings.HasSuffix(strings.TrimSpace(c), " µs") }) {
			cols = cols[:0]
			for j, c := range cells {
				if strings.HasSuffix(strings.TrimSpace(c), " µs") {
					cols = append(cols, j)
				}
			}
			continue
		}
		for _, j := range cols {
			if j < len(cells) && latencyCell.MatchString(cells[j]) {
				cells[j] = fmt.Sprintf("%*s ", len(cells[j])-1, "*")
			}
		}
		lines[i] = strings.Join(cells, "|")
	}
	if len(cols) == 0 {
		t.Errorf("no latency columns (header ending in µs) in:\n%s", s)
	}
	return strings.Join(lines, "\n")
}

// runCSVMasked are the CSV columns maskRunCSV masks.
var runCSVMasked = map[string]bool{
	"p50_us": true, "p99_us": true, "p999_us": true, "max_us": true, // wall-clock latency of the Redis calls
	"duration_ms": true, // wall-clock time the row took
}

// maskRunCSV replaces the wall-clock columns of run's CSV with "*".
func maskRunCSV(t *testing.T, s string) string {
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("stdout is not CSV: %v\n%s", err, s)
	}
	for _, rec := range recs[1:] {
		for j, name := range recs[0] {
			if runCSVMasked[name] && j < len(rec) {
				rec[j] = "*"
			}
		}
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(recs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// maskRunJSON masks the fields of run's results JSON that vary from run
// to run. Numbers become 0 and strings "MASKED"; a field that is absent
// stays absent, so a dropped field still shows in the diff. The masked
// document is re-encoded with sorted keys (key order is not pinned).
func maskRunJSON(t *testing.T, s string) string {
	doc := decodeJSON(t, s)
	maskHeader(doc)
	if cfg, ok := doc["config"].(map[string]any); ok {
		maskFields(cfg, "prefix") // ratelab:<run id>:, the run id holds the start time and random bits
	}
	rows, _ := doc["results"].([]any)
	for _, r := range rows {
		if row, ok := r.(map[string]any); ok {
			maskFields(row,
				"p50_us", "p99_us", "p999_us", "max_us", // wall-clock latency of the Redis calls
				"duration_ms", // wall-clock time the row took
			)
		}
	}
	return encodeJSON(t, doc)
}

// verifyDuration is the wall-clock duration at the end of verify's summary
// line: "2664 decisions, 0 errors, 0.2s".
var verifyDuration = regexp.MustCompile(`(?m)^(\d+ decisions, \d+ errors, )\d+\.\ds`)

// maskVerifyTable masks the run's wall-clock duration in verify's summary line.
func maskVerifyTable(t *testing.T, s string) string {
	if !verifyDuration.MatchString(s) {
		t.Errorf("no summary line (N decisions, N errors, N.Ns) in:\n%s", s)
	}
	return verifyDuration.ReplaceAllString(s, "${1}*s")
}

// maskVerifyJSON masks the fields of verify's JSON report that vary from
// run to run: its header's (maskHeader).
func maskVerifyJSON(t *testing.T, s string) string {
	doc := decodeJSON(t, s)
	maskHeader(doc)
	return encodeJSON(t, doc)
}

// maskHeader masks the fields of a result's header (measure.Header) that
// vary from run to run.
func maskHeader(doc map[string]any) {
	maskFields(doc,
		"started_at",   // wall-clock time the command began
		"duration_ms",  // wall-clock time it took
		"run_id",       // the start time and random bits
		"tool_version", // the build's (git describe, or the VCS revision)
	)
	if rd, ok := doc["redis"].(map[string]any); ok {
		maskFields(rd,
			"addr",    // the test server's random port
			"version", // the installed redis-server's; memory columns, kept, show any change that matters
		)
	}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber() // numbers as written, not through float64
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, s)
	}
	return doc
}

func encodeJSON(t *testing.T, doc map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// maskFields zeroes the named fields of m that are present: numbers to 0,
// anything else to "MASKED".
func maskFields(m map[string]any, names ...string) {
	for _, n := range names {
		switch m[n].(type) {
		case nil:
		case json.Number:
			m[n] = json.Number("0")
		default:
			m[n] = "MASKED"
		}
	}
}

// diffMiddle shows where want and got differ: the lines between their
// common prefix and suffix, at most 40 of each, with the line number.
func diffMiddle(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	var out strings.Builder
	fmt.Fprintf(&out, "from line %d:\n", p+1)
	for _, side := range []struct {
		sign  string
		lines []string
	}{{"-", a[p : len(a)-s]}, {"+", b[p : len(b)-s]}} {
		for i, l := range side.lines {
			if i == 40 {
				fmt.Fprintf(&out, "%s ... %d more lines\n", side.sign, len(side.lines)-40)
				break
			}
			fmt.Fprintf(&out, "%s%s\n", side.sign, l)
		}
	}
	return out.String()
}
