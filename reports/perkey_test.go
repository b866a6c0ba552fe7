package reports

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/measure"
)

// replayFixture is a traffic replay's results: two algorithms, per-key
// figures, a trailing series and malformed lines.
func replayFixture() *measure.Results {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := &measure.Results{Header: measure.Header{Tool: "ratelab", Command: "run", Complete: true, StartedAt: start, DurationMS: 4200,
		Redis: measure.RedisInfo{Mode: "exec", Addr: "127.0.0.1:6379", Version: "7.2.4"}},
		Config: measure.RunConfig{Algorithms: []string{"fixed-window", "sliding-log"}, Scenarios: []string{"traffic"},
			Limit: 100, WindowMS: 60000, Clock: "virtual", Prefix: "ratelab:r1:"},
		Traffic: &measure.TrafficInfo{Source: "access.log.gz", Format: "access-log", Gzip: true, Lines: 1002, Records: 1000,
			Malformed: 2, Examples: []measure.LineExample{{Line: 7, Reason: "bad time [x]"}, {Line: 9, Reason: "cost 200 is above the limit 100"}},
			Keys: 3, Anchor: "2024-01-01T00:00:00Z", SpanMS: 86_399_000, Decisions: 2000, DecisionsPerSec: 50000, Pipeline: 256, PeakRSSBytes: 50 << 20,
			ReplayS: 1.6, RedisCPUS: 1.2, RedisCores: 1},
	}
	trail := func(peak int64) []measure.WindowPoint {
		var pts []measure.WindowPoint
		for i := range 200 {
			v := int64(40 + i%50)
			if i == 120 {
				v = peak
			}
			pts = append(pts, measure.WindowPoint{TMS: float64(i) * 432_000, Accepted: v})
		}
		return pts
	}
	r.Results = []measure.Row{
		{Algorithm: "fixed-window", Scenario: "traffic", LimitDesc: "100 per 1m", Limit: 100, WindowMS: 60000, Clock: "virtual",
			Requests: 1000, AcceptedRequests: 990, Offered: 1000, Accepted: 990, MaxInWindow: 200, Ratio: 2, Ideal: 985, Fidelity: 1.005,
			MemoryBytes: 9000, Keys: 30, P50US: 800, P99US: 2000,
			PerKey: &measure.PerKey{Keys: 3, KeysOver: 1, WorstKey: "203.0.113.1", WorstMaxInWindow: 200, WorstRatio: 2,
				Starved: 12, StarvedKeys: 2, MostStarved: []measure.KeyCount{{Key: "10.0.0.1", Starved: 10}, {Key: "10.0.0.2", Starved: 2}},
				PeakMemoryBytes: 12000, MemorySamples: 4},
			Trailing: trail(200)},
		{Algorithm: "sliding-log", Scenario: "traffic", LimitDesc: "100 per 1m", Limit: 100, WindowMS: 60000, Clock: "virtual",
			Requests: 1000, AcceptedRequests: 985, Offered: 1000, Accepted: 985, MaxInWindow: 100, Ratio: 1, Ideal: 985, Fidelity: 1,
			MemoryBytes: 30000, Keys: 3, P50US: 900, P99US: 2100,
			PerKey: &measure.PerKey{Keys: 3, WorstKey: "203.0.113.1", WorstMaxInWindow: 100, WorstRatio: 1,
				PeakMemoryBytes: 31000, MemorySamples: 4},
			Trailing: trail(100)},
	}
	return r
}

func TestPerKeyGolden(t *testing.T) {
	for _, format := range []Format{Table, Wide, Markdown} {
		var b bytes.Buffer
		if err := Write(&b, format, replayFixture()); err != nil {
			t.Fatal(err)
		}
		golden(t, "perkey-"+string(format)+".golden", b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteReport(&b, replayFixture(), []string{"trailing-traffic.png"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "perkey-report.md.golden", b.Bytes())
}

// Scenario runs show no per-key table.
func TestNoPerKeyForScenarios(t *testing.T) {
	r := sixFixture()
	var b bytes.Buffer
	if err := Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "per key") {
		t.Error("a scenario run shows a per-key table")
	}
	for i := range r.Results {
		r.Results[i].Trailing = nil
	}
	if err := PlotTrailing(r, r.Results[0].Scenario, filepath.Join(t.TempDir(), "x.png")); err == nil {
		t.Error("PlotTrailing of rows without a series: no error")
	}
}

func TestPlotTrailing(t *testing.T) {
	dir := t.TempDir()
	for _, ext := range []string{".png", ".svg"} {
		path := filepath.Join(dir, "trailing"+ext)
		if err := PlotTrailing(replayFixture(), "traffic", path); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() < 5000 {
			t.Fatalf("%s: %v", path, err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "trailing.svg"))
	for _, want := range []string{"fixed-window", "1 of 3 keys over the limit", "limit L = 100 per key", "time t from the scenario&#39;s anchor (h)"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

// report.html of a replay, rendered by headless Chromium, shows the
// per-key table and the trailing-window plot.
func TestReplayHTMLInChromium(t *testing.T) {
	testenv.SkipUnderRace(t)
	bin := chromium(t)
	dir := t.TempDir()
	if err := WriteDir(dir, replayFixture()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"trailing-traffic.png", "trailing-traffic.svg", "ratio.png", "report.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := "file://" + filepath.Join(dir, "report.html")
	args := func(extra ...string) []string {
		return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1280,3200"}, append(extra, url)...)
	}
	dom, err := exec.CommandContext(ctx, bin, args("--dump-dom")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	for _, want := range []string{"Per key", "worst max in W", "203.0.113.1", "10.0.0.1 (10), 10.0.0.2 (2)", "trailing-traffic",
		"1 of 3 keys over the limit", "malformed: line 7: bad time [x]", "peak RSS 50.0 MiB"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}
	if n := bytes.Count(dom, []byte("<svg")); n != 2 {
		t.Errorf("the rendered DOM has %d SVGs, want 2 (trailing, ratio)", n)
	}
	shot := filepath.Join(dir, "report.png")
	if out, err := exec.CommandContext(ctx, bin, args("--screenshot="+shot)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if *screenshot != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(strings.Replace(*screenshot, ".png", "-replay.png", 1), data, 0o644)
	}
}
