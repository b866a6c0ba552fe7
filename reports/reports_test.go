package reports

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

var (
	update = flag.Bool("update", false, "rewrite the golden files under testdata/")
)

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./reports/ -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (- golden, + got; rewrite with: go test ./reports/ -update):\n%s",
			path, lineDiff(string(want), string(got)))
	}
}

// lineDiff is a small LCS line diff: " " common, "-" only in want, "+" only in got.
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			fmt.Fprintf(&out, "  %s\n", a[i])
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+ %q\n", b[j])
			j++
		default:
			fmt.Fprintf(&out, "- %q\n", a[i])
			i++
		}
	}
	return out.String()
}

func TestWriteGolden(t *testing.T) {
	for _, tc := range []struct {
		format, golden string
		r              *measure.Results
	}{
		{"table", "table.golden", reportstest.Run()},
		{"wide", "table-wide.golden", reportstest.Run()},
		{"markdown", "markdown.golden", reportstest.Run()},
		{"csv", "csv.golden", reportstest.Run()},
		// An incomplete run says so first, then shows what it has.
		{"table", "table-incomplete.golden", reportstest.Incomplete()},
		{"markdown", "markdown-incomplete.golden", reportstest.Incomplete()},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, Format(tc.format), tc.r); err != nil {
				t.Fatalf("Write(%s): %v", tc.format, err)
			}
			golden(t, tc.golden, b.Bytes())
		})
	}
}

func TestTableVerdicts(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "table", reportstest.Run()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// One verdict per row above the limit, none for the others.
	for _, want := range []string{
		"fixed-window on boundary-burst: 100 accepted within one 10s window — 2.00x the limit of 50\n",
		"bucketed-hash on boundary-burst: 60 accepted within one 10s window — 1.20x the limit of 50\n",
		"reservoir on boundary-burst: 55 accepted within one 10s window — 1.10x the limit of 50\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks verdict %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sliding-log on") || strings.Contains(out, "on steady") {
		t.Errorf("verdict for a row within its limit:\n%s", out)
	}
	if strings.HasPrefix(out, "INCOMPLETE") {
		t.Errorf("complete run reported as incomplete:\n%s", out)
	}

	b.Reset()
	if err := Write(&b, "table", reportstest.Incomplete()); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "INCOMPLETE: steady: redis: connection reset by peer" {
		t.Errorf("first line of an incomplete run: got %q", first)
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	var b bytes.Buffer
	err := Write(&b, "x", reportstest.Run())
	want := `format: unknown format "x" (want table, markdown, json or csv)` // the field; cmd maps it to --format
	if err == nil || err.Error() != want {
		t.Fatalf("Write(x): got error %v, want %q", err, want)
	}
	if b.Len() != 0 {
		t.Errorf("Write(x) wrote %q", b.String())
	}
	// Every listed format works.
	for _, f := range Formats {
		if err := Write(&b, f, reportstest.Run()); err != nil {
			t.Errorf("Write(%s): %v", f, err)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, r := range []*measure.Results{reportstest.Run(), reportstest.Incomplete()} {
		var b bytes.Buffer
		if err := Write(&b, "json", r); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, "{\n  \"tool\": \"ratelab\",\n") || !strings.HasSuffix(out, "}\n") {
			t.Errorf("json not indented by two spaces with a trailing newline:\n%.200s", out)
		}
		path := filepath.Join(t.TempDir(), "results.json")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := measure.ReadResults(path)
		if err != nil {
			t.Fatalf("ReadResults: %v", err)
		}
		if !got.StartedAt.Equal(r.StartedAt) {
			t.Errorf("started_at: got %v, want %v", got.StartedAt, r.StartedAt)
		}
		got.StartedAt, r.StartedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip changed the results:\ngot  %+v\nwant %+v", got, r)
		}
	}
}

func TestReadResultsRejects(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string
	}{
		// Not JSON at all.
		{"notjson.json", "algorithm,scenario\nfixed-window,steady\n", "invalid JSON"},
		// JSON without a results array.
		{"empty.json", "{}", `no "results" array`},
		{"null.json", `{"results": null}`, `no "results" array`},
		{"object.json", `{"tool": "ratelab", "results": {"a": 1}}`, `no "results" array`},
		{"array.json", `[1, 2]`, "invalid JSON"},
		// A results array of the wrong shape.
		{"badrow.json", `{"results": [{"limit": "fifty"}]}`, "limit"},
		{"blank.json", "", "invalid JSON"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := measure.ReadResults(path)
		if err == nil {
			t.Errorf("%s: got %+v, want an error", tc.name, r)
			continue
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q should name the path and say %q", tc.name, err, tc.want)
		}
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := measure.ReadResults(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: got %v, want an error naming it", err)
	}
	// An empty results array is a valid (if empty) run.
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(`{"tool":"ratelab","results":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := measure.ReadResults(ok); err != nil {
		t.Errorf("empty results array: %v", err)
	}
}

func TestCSV(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "csv", reportstest.Run()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("csv does not parse: %v", err)
	}
	if len(recs) != 1+len(reportstest.Run().Results) {
		t.Fatalf("got %d records, want a header and %d rows", len(recs), len(reportstest.Run().Results))
	}
	header := strings.Join(recs[0], ",")
	if strings.Contains(header, "timeline") || !strings.HasPrefix(header, "algorithm,scenario,limit_desc,limit,window_ms,") {
		t.Errorf("header: %s", header)
	}
	// Base units, unscaled: bytes and µs as integers, ratio as a plain float.
	col := map[string]int{}
	for i, n := range recs[0] {
		col[n] = i
	}
	first := recs[1]
	for name, want := range map[string]string{"memory_bytes": "144", "ratio": "2", "p99_us": "95", "fidelity": "2", "window_ms": "10000"} {
		if got := first[col[name]]; got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"},
		{72, "72 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{5192, "5.1 KiB"},
		{1363149, "1.3 MiB"},
		{1048575, "1.0 MiB"}, // rounds up into the next unit, not "1024.0 KiB"
		{3 << 30, "3.0 GiB"},
	} {
		if got := formatBytes(tc.in); got != tc.want {
			t.Errorf("formatBytes(%d): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatWindow(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{10000, "10s"},
		{60000, "1m"},
		{90000, "1m30s"},
		{3600000, "1h"},
		{86400000, "1d"},
		{250, "250ms"},
	} {
		if got := FormatWindow(tc.ms); got != tc.want {
			t.Errorf("formatWindow(%d): got %q, want %q", tc.ms, got, tc.want)
		}
	}
}

func TestWriteReportGolden(t *testing.T) {
	plots := []string{"timeline-boundary-burst.png", "timeline-steady.png", "ratio.png"}
	var b bytes.Buffer
	if err := WriteReport(&b, reportstest.Run(), plots); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md.golden", b.Bytes())
	for _, p := range plots {
		name := strings.TrimSuffix(p, ".png")
		if !strings.Contains(b.String(), "!["+name+"]("+p+")") {
			t.Errorf("report does not show %s", p)
		}
	}

	b.Reset()
	if err := WriteReport(&b, reportstest.Incomplete(), nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "report-incomplete.md.golden", b.Bytes())
}

// JSON cannot hold NaN: the error says which value, and no partial
// document is written.
func TestWriteJSONNaN(t *testing.T) {
	r := reportstest.Run()
	r.Results[0].Ratio = math.NaN()
	var b bytes.Buffer
	err := Write(&b, "json", r)
	if err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("got %v, want an error naming NaN", err)
	}
	if b.Len() != 0 {
		t.Errorf("partial output: %.100q", b.String())
	}
}

// A table fitted to a terminal's width keeps every line within it, leaving
// out columns (and saying which) rather than wrapping rows; the columns a
// person needs first stay.
func TestWriteTableFitted(t *testing.T) {
	for _, width := range []int{100, 79, 60} {
		var b bytes.Buffer
		if err := WriteTableFitted(&b, reportstest.Run(), width); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, line := range strings.Split(out, "\n") {
			if n := len([]rune(line)); n > width {
				t.Errorf("width %d: a line of %d runes: %q", width, n, line)
			}
		}
		for _, want := range []string{"algorithm", "accepted", "max in W", "ratio", "fidelity", "| fixed-window"} {
			if !strings.Contains(out, want) {
				t.Errorf("width %d: the table lacks %q:\n%s", width, want, out)
			}
		}
	}
	var table, fitted bytes.Buffer
	if err := Write(&table, "table", reportstest.Run()); err != nil {
		t.Fatal(err)
	}
	if err := WriteTableFitted(&fitted, reportstest.Run(), TableWidth); err != nil {
		t.Fatal(err)
	}
	if table.String() != fitted.String() {
		t.Errorf("fitted to TableWidth differs from the table format:\n%s\nwant:\n%s", fitted.String(), table.String())
	}
}
