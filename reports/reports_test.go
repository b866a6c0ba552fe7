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
)

var (
	update   = flag.Bool("update", false, "rewrite the golden files under testdata/")
	plotsDir = flag.String("plots", "", "also write the fixture's run directory (plots, report.md) here, to look at")
)

// burstTimes are the decision times (ms from the boundary) of the
// boundary-burst timeline points, and burstOffered the cumulative offered
// cost at each: 50 requests in the second before the boundary, 50 after.
var (
	burstTimes   = []float64{-1000, -800, -600, -400, -200, -10, 0, 200, 400, 600, 800, 990}
	burstOffered = []int64{1, 11, 21, 31, 41, 50, 51, 61, 71, 81, 91, 100}
	steadyTimes  = []float64{-15000, -12000, -9000, -6000, -3000, 0, 3000, 6000, 9000, 12000, 15000}
	// steadyOffered: 4 requests a second for 30 s.
	steadyOffered = []int64{1, 13, 25, 37, 49, 61, 73, 85, 97, 109, 120}
)

// timeline builds a Row timeline from times, offered and accepted cost.
func timeline(times []float64, offered, accepted []int64) []measure.Point {
	pts := make([]measure.Point, len(times))
	for i := range times {
		pts[i] = measure.Point{TMS: times[i], Accepted: accepted[i], Denied: offered[i] - accepted[i]}
	}
	return pts
}

// fixture is a complete run of 4 algorithms x 2 scenarios with plausible
// numbers: fixed-window lets 2x through at the boundary, bucketed-hash and
// reservoir a little more than L, sliding-log exactly L.
func fixture() *measure.Results {
	algs := []string{"fixed-window", "sliding-log", "bucketed-hash", "reservoir"}
	const limit, window = 50, 10000
	burst := map[string][]int64{
		"fixed-window":  burstOffered,
		"sliding-log":   {1, 11, 21, 31, 41, 50, 50, 50, 50, 50, 50, 50},
		"bucketed-hash": {1, 11, 21, 31, 41, 50, 50, 54, 57, 59, 60, 60},
		"reservoir":     {1, 11, 21, 31, 41, 50, 50, 51, 52, 53, 54, 55},
	}
	steadyBH := []int64{1, 13, 25, 37, 49, 61, 72, 84, 96, 107, 118}
	desc := map[string]string{
		"fixed-window":  "50 per 10s",
		"sliding-log":   "50 per 10s",
		"bucketed-hash": "50 per 10s (precision 1s)",
		"reservoir":     "capacity 50, refill 5/s",
	}
	// per algorithm: memory boundary-burst, memory steady, keys, p50, p99 (µs)
	mem := map[string][5]int64{
		"fixed-window":  {144, 72, 2, 38, 95},
		"sliding-log":   {5192, 2184, 1, 52, 131},
		"bucketed-hash": {412, 436, 1, 61, 158},
		"reservoir":     {120, 120, 1, 41, 99},
	}
	r := &measure.Results{
		Header: measure.Header{Tool: "ratelab", Command: "run",
			Redis:     measure.RedisInfo{Mode: "exec", Addr: "127.0.0.1:40123", Version: "7.0.15"},
			StartedAt: time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC), DurationMS: 4210, Complete: true},
		Config: measure.RunConfig{
			Algorithms: algs,
			Scenarios:  []string{"boundary-burst", "steady"},
			Clock:      "virtual",
			Seed:       1,
			Prefix:     "ratelab:t1:",
		},
	}
	row := func(alg, sc string, offered, accepted, maxIn, ideal int64, maxEnd float64, tl []measure.Point, memory int64) measure.Row {
		m := mem[alg]
		return measure.Row{
			Algorithm: alg, Scenario: sc, LimitDesc: desc[alg], Limit: limit, WindowMS: window, Clock: "virtual",
			Requests: offered, AcceptedRequests: accepted, Offered: offered, Accepted: accepted,
			MaxInWindow: maxIn, MaxWindowEndMS: maxEnd, Ratio: float64(maxIn) / limit,
			Ideal: ideal, Fidelity: float64(accepted) / float64(ideal),
			MemoryBytes: memory, Keys: m[2],
			P50US: m[3], P99US: m[4], P999US: m[4] + 40, MaxUS: m[4] + 120,
			DurationMS: 12, Timeline: tl,
		}
	}
	for _, alg := range algs {
		acc := burst[alg]
		n := acc[len(acc)-1]
		r.Results = append(r.Results, row(alg, "boundary-burst", 100, n, n, 50, 990,
			timeline(burstTimes, burstOffered, acc), mem[alg][0]))
	}
	for _, alg := range algs {
		acc := steadyOffered
		if alg == "bucketed-hash" {
			acc = steadyBH
		}
		n := acc[len(acc)-1]
		r.Results = append(r.Results, row(alg, "steady", 120, n, 40, 120, 14750,
			timeline(steadyTimes, steadyOffered, acc), mem[alg][1]))
	}
	for i := range r.Results {
		r.Results[i].Trailing = trailingOf(r.Results[i])
	}
	return r
}

// trailingOf is the trailing-window series of a fixture row, from the
// accepted steps of its timeline.
func trailingOf(row measure.Row) []measure.WindowPoint {
	var ev []measure.Event
	var prev int64
	for _, p := range row.Timeline {
		if p.Accepted > prev {
			ev = append(ev, measure.Event{At: time.Duration(p.TMS * float64(time.Millisecond)), Cost: p.Accepted - prev})
		}
		prev = p.Accepted
	}
	return measure.WindowSeries(ev, time.Duration(row.WindowMS)*time.Millisecond, 0, 0)
}

// incompleteFixture is a run that stopped during its second scenario.
func incompleteFixture() *measure.Results {
	r := fixture()
	r.Complete = false
	r.Error = "steady: redis: connection reset by peer"
	r.Results = r.Results[:4]
	r.DurationMS = 1730
	return r
}

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
		{"table", "table.golden", fixture()},
		{"wide", "table-wide.golden", fixture()},
		{"markdown", "markdown.golden", fixture()},
		{"csv", "csv.golden", fixture()},
		// An incomplete run says so first, then shows what it has.
		{"table", "table-incomplete.golden", incompleteFixture()},
		{"markdown", "markdown-incomplete.golden", incompleteFixture()},
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
	if err := Write(&b, "table", fixture()); err != nil {
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
	if err := Write(&b, "table", incompleteFixture()); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "INCOMPLETE: steady: redis: connection reset by peer" {
		t.Errorf("first line of an incomplete run: got %q", first)
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	var b bytes.Buffer
	err := Write(&b, "x", fixture())
	want := `format: unknown format "x" (want table, markdown, json or csv)` // the field; cmd maps it to --format
	if err == nil || err.Error() != want {
		t.Fatalf("Write(x): got error %v, want %q", err, want)
	}
	if b.Len() != 0 {
		t.Errorf("Write(x) wrote %q", b.String())
	}
	// Every listed format works.
	for _, f := range Formats {
		if err := Write(&b, f, fixture()); err != nil {
			t.Errorf("Write(%s): %v", f, err)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, r := range []*measure.Results{fixture(), incompleteFixture()} {
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
	if err := Write(&b, "csv", fixture()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("csv does not parse: %v", err)
	}
	if len(recs) != 1+len(fixture().Results) {
		t.Fatalf("got %d records, want a header and %d rows", len(recs), len(fixture().Results))
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
		if got := formatWindow(tc.ms); got != tc.want {
			t.Errorf("formatWindow(%d): got %q, want %q", tc.ms, got, tc.want)
		}
	}
}

func TestWriteReportGolden(t *testing.T) {
	plots := []string{"timeline-boundary-burst.png", "timeline-steady.png", "ratio.png"}
	var b bytes.Buffer
	if err := WriteReport(&b, fixture(), plots); err != nil {
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
	if err := WriteReport(&b, incompleteFixture(), nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "report-incomplete.md.golden", b.Bytes())
}

// checkImage fails unless path is a non-empty PNG or SVG, by its extension.
func checkImage(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch filepath.Ext(path) {
	case ".png":
		if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) || len(data) < 1000 {
			t.Errorf("%s: not a PNG (%d bytes)", path, len(data))
		}
	case ".svg":
		if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("</svg>")) {
			t.Errorf("%s: not an SVG (%d bytes)", path, len(data))
		}
		if !bytes.Contains(data, []byte("sans-serif")) {
			t.Errorf("%s: text has no sans-serif fallback", path)
		}
	}
}

func TestPlots(t *testing.T) {
	dir := t.TempDir()
	r := fixture()
	for _, ext := range []string{".png", ".svg"} {
		for _, sc := range r.Config.Scenarios {
			path := filepath.Join(dir, "timeline-"+sc+ext)
			if err := PlotTimeline(r, sc, path); err != nil {
				t.Fatalf("PlotTimeline(%s): %v", sc, err)
			}
			checkImage(t, path)
		}
		path := filepath.Join(dir, "ratio"+ext)
		if err := PlotRatio(r, path); err != nil {
			t.Fatalf("PlotRatio: %v", err)
		}
		checkImage(t, path)
	}

	// Errors name the file and say what is wrong.
	if err := PlotTimeline(r, "no-such-scenario", filepath.Join(dir, "x.png")); err == nil || !strings.Contains(err.Error(), "no-such-scenario") {
		t.Errorf("unknown scenario: got %v", err)
	}
	if err := PlotRatio(r, filepath.Join(dir, "ratio.gif")); err == nil || !strings.Contains(err.Error(), "ratio.gif") {
		t.Errorf(".gif: got %v", err)
	}
	if err := PlotRatio(&measure.Results{}, filepath.Join(dir, "empty.png")); err == nil {
		t.Errorf("no rows: got no error")
	}
}

// NaN and Inf must never reach gonum/plot, which refuses them.
func TestPlotsNonFinite(t *testing.T) {
	r := fixture()
	r.Results[0].Ratio = math.NaN()
	r.Results[1].Ratio = math.Inf(1)
	r.Results[2].Timeline[3].TMS = math.NaN()
	r.Results[3].Timeline[0].TMS = math.Inf(-1)
	r.Results = r.Results[:len(r.Results)-1] // reservoir did not run steady
	dir := t.TempDir()
	if *plotsDir != "" {
		dir = filepath.Join(*plotsDir, "nonfinite")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := PlotRatio(r, filepath.Join(dir, "ratio"+ext)); err != nil {
			t.Errorf("PlotRatio with NaN/Inf ratios: %v", err)
		}
		if err := PlotTimeline(r, "boundary-burst", filepath.Join(dir, "timeline"+ext)); err != nil {
			t.Errorf("PlotTimeline with NaN/Inf times: %v", err)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "n/a") || !strings.Contains(b.String(), "inf") {
		t.Errorf("table should show NaN as n/a and Inf as inf:\n%s", b.String())
	}
	// A timeline of only non-finite times is an error, not a panic.
	r.Results[0].Timeline = []measure.Point{{TMS: math.NaN(), Accepted: 1}}
	r.Results = r.Results[:1]
	if err := PlotTimeline(r, "boundary-burst", filepath.Join(dir, "t.png")); err == nil {
		t.Errorf("all-NaN timeline: got no error")
	}
}

func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "1")
	if *plotsDir != "" {
		dir = *plotsDir
	}
	r := fixture()
	if err := WriteDir(dir, r); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	for _, name := range []string{
		"results.json", "report.md",
		"timeline-boundary-burst.png", "timeline-boundary-burst.svg",
		"timeline-steady.png", "timeline-steady.svg",
		"ratio.png", "ratio.svg",
	} {
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", name, err)
			continue
		}
		checkImage(t, path)
	}
	got, err := measure.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != len(r.Results) {
		t.Errorf("results.json has %d rows, want %d", len(got.Results), len(r.Results))
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{"(timeline-boundary-burst.png)", "(timeline-steady.png)", "(ratio.png)"} {
		if !bytes.Contains(report, []byte(img)) {
			t.Errorf("report.md does not reference %s", img)
		}
	}

	// A path under a regular file cannot be created: the error names it.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(filepath.Join(file, "out"), r); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("WriteDir under a file: got %v", err)
	}
}

// WriteDir draws its plots concurrently: every file is byte for byte the
// one drawn alone, one after another.
func TestWriteDirPlotsAsAlone(t *testing.T) {
	dir := t.TempDir()
	r := fixture()
	if err := WriteDir(dir, r); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	alone := t.TempDir()
	var files []string
	for _, sc := range []string{"boundary-burst", "steady"} {
		for _, ext := range []string{".png", ".svg"} {
			name := "timeline-" + sc + ext
			if err := PlotTimeline(r, sc, filepath.Join(alone, name)); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		}
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := PlotRatio(r, filepath.Join(alone, "ratio"+ext)); err != nil {
			t.Fatal(err)
		}
		files = append(files, "ratio"+ext)
	}
	for _, name := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(alone, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: WriteDir's differs from the one drawn alone", name)
		}
	}
}

// JSON cannot hold NaN: the error says which value, and no partial
// document is written.
func TestWriteJSONNaN(t *testing.T) {
	r := fixture()
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
