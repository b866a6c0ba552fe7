// Package reportstest holds the results fixtures and image checks that
// the tests of reports, reports/plots and publish share.
package reportstest

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/measure"
)

// Chromium finds Debian's chromium (or another Chromium build) on PATH.
// There is none: the test skips, or fails under `make test` (testenv.Tool).
func Chromium(t testing.TB) string {
	t.Helper()
	return testenv.Tool(t, "chromium", "chromium", "chromium-browser", "google-chrome")
}

// DirNames lists dir's file names, sorted.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func CountPixels(img image.Image, r image.Rectangle, match func(r, g, b uint32) bool) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if match(cr, cg, cb) {
				n++
			}
		}
	}
	return n
}

// BurstRun is a boundary-burst run of two algorithms with their
// trailing-window series: fixed-window admits L just before the boundary
// and L again from it (2L in one window), sliding-log L only.
func BurstRun() *measure.Results {
	const limit, window = 50, 10 * time.Second
	r := &measure.Results{Header: measure.Header{Command: "run", Complete: true}}
	for _, alg := range []struct {
		name  string
		after int // accepted from the boundary on
	}{{"fixed-window", limit}, {"sliding-log", 0}} {
		var ev []measure.Event
		for i := 0; i < limit; i++ {
			ev = append(ev, measure.Event{At: -time.Second + time.Duration(i)*time.Millisecond, Cost: 1})
		}
		for i := 0; i < alg.after; i++ {
			ev = append(ev, measure.Event{At: time.Second + time.Duration(i)*time.Millisecond, Cost: 1})
		}
		maxIn, end := measure.MaxInWindow(ev, window)
		worst := measure.SplitWindow(ev, window, end)
		r.Results = append(r.Results, measure.Row{Algorithm: alg.name, Scenario: "boundary-burst",
			Limit: limit, WindowMS: window.Milliseconds(), MaxInWindow: maxIn,
			MaxWindowEndMS: float64(end.Microseconds()) / 1000, Ratio: float64(maxIn) / limit,
			Trailing: measure.WindowSeries(ev, window, 0, measure.MaxTrailingPoints), Worst: &worst})
	}
	return r
}

// Capacity is a capacity run with numbers as measured on Redis 7.0:
// the sorted set's listpack -> skiplist change between 128 and 129 entries.
func Capacity() *measure.CapacityResults {
	row := func(alg string, limit int64, keys int, enc string, entries, mu int64, overhead, delta float64) measure.CapacityRow {
		r := measure.CapacityRow{
			Algorithm: alg, Limit: limit, WindowMS: 3600000, LimitDesc: "per 1h", Keys: keys, KeysWanted: 10000,
			Calls: int64(keys) * entries, KeyNameBytes: 45, Type: "zset", Encoding: enc, Entries: entries, MemoryBytes: mu,
			BytesPerEntry: float64(mu) / float64(entries), TTLOverheadBytes: overhead, MemoryWithTTLBytes: float64(mu) + overhead,
			UsedMemoryDeltaBytes: delta, ActiveKeys: 1_000_000, ProjectedBytes: int64(delta * 1e6), FillMS: 1200,
		}
		r.Agreement = r.MemoryWithTTLBytes / delta
		return r
	}
	return &measure.CapacityResults{
		Header: measure.Header{Tool: "ratelab", Command: "capacity",
			Redis:     measure.RedisInfo{Mode: "exec", Addr: "127.0.0.1:40123", Version: "7.0.15"},
			StartedAt: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), DurationMS: 21500, Complete: true},
		Config: measure.CapacityRunConfig{
			Algorithms: []string{"sliding-log", "fixed-window"}, Limits: []int64{10, 128, 129, 10000},
			Keys: 10000, ActiveKeys: 1_000_000, WindowMS: 3600000, Budget: 100000, Prefix: "ratelab:t1:",
		},
		Server: measure.CapacityServerInfo{ZsetMaxListpackEntries: 128, HashMaxListpackEntries: 512},
		Results: []measure.CapacityRow{
			row("sliding-log", 10, 10000, "listpack", 10, 536, 66, 602),
			row("sliding-log", 128, 781, "listpack", 128, 6203, 56, 6264),
			row("sliding-log", 129, 775, "skiplist", 129, 18006, 56, 19107),
			row("sliding-log", 10000, 10, "skiplist", 10000, 1290950, 56, 1371018),
			row("fixed-window", 10, 10000, "int", 1, 104, 66, 154),
			row("fixed-window", 10000, 10000, "int", 1, 104, 66, 170),
		},
		Trim: &measure.TrimResult{Algorithm: "sliding-log", Keys: 20, FilledEntries: 200, Entries: 51,
			Encoding: "skiplist", MemoryBytes: 8435, FreshEncoding: "listpack", FreshMemoryBytes: 2136},
	}
}

// Incomplete is a run that stopped during its second scenario.
func Incomplete() *measure.Results {
	r := Run()
	r.Complete = false
	r.Error = "steady: redis: connection reset by peer"
	r.Results = r.Results[:4]
	r.DurationMS = 1730
	return r
}

func ErrString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func Verify(violated bool) *measure.VerifyReport {
	r := &measure.VerifyReport{Target: "fixed-window", LimitDesc: "50 per 2s", Limit: 50, WindowMS: 2000,
		Header:  measure.Header{DurationMS: 2300, Complete: true},
		Verdict: measure.Holds, Clock: "virtual+real", Decisions: 7110,
		SkewDeltaMS: 20, SkewSensitivity: 2,
		Families: []measure.FamilyResult{
			{Family: "boundary", Trials: 3, Verdict: measure.Holds, MaxRatio: 1, Mode: "virtual"},
			{Family: "overload", Trials: 2, Verdict: measure.Holds, MaxRatio: 1, MinFidelity: 0.97, Mode: "virtual"},
			{Family: "isolation", Trials: 2, Verdict: measure.Holds, Mode: "virtual"},
			{Family: "weighted", Verdict: measure.Skipped, Note: "the target takes no cost (no {cost} argument)"},
		},
	}
	if violated {
		r.Verdict, r.Dir = measure.Violated, "verify-report"
		r.Families[0].Verdict, r.Families[0].MaxRatio = measure.Violated, 2
		var ds []measure.Evidence
		trace := &measure.Trace{AnchorUS: 1767225600000000, WindowMS: 2000, Shrunk: true, FromRequests: 40, Replays: 12, Minimal: true, CSV: "counter-example.csv"}
		for i := int64(0); i < 14; i++ {
			ds = append(ds, measure.Evidence{Key: "user", Cost: 1, AtUS: -7 + i})
			trace.Requests = append(trace.Requests, measure.Step{AtUS: -7 + i, Key: "user", Cost: 1, Allowed: true})
		}
		r.CounterExample = &measure.CounterExample{Family: "boundary", Trial: "L ending 1µs before the boundary, L from it",
			Kind: measure.Violated, Accepted: 14, Limit: 7, StartUS: -7, EndUS: 6, Decisions: ds,
			Explain: "14 accepted within 13µs (less than the window 2s): 2.00x the limit of 7", Trace: trace}
	}
	return r
}

// VerifyFirstHit is the violated report of a fixed window from the first
// hit (a script that reads no clock: FromHit), limit 10 per 1m, as verify
// finds and shrinks it: the trial's first request at 0 opens the key's
// window, 3 requests just before it ends are counted in it, 8 just after
// in a new one: 11 within about 1ms; as found, 19 (9 + 10).
func VerifyFirstHit() *measure.VerifyReport {
	const w = 60_000_000 // µs
	r := &measure.VerifyReport{Target: "fw-first-hit.lua", LimitDesc: "10 per 1m", Limit: 10, WindowMS: 60_000,
		Header:  measure.Header{DurationMS: 900, Complete: true},
		Verdict: measure.Violated, Clock: "virtual", Decisions: 26294, Dir: "verify-report",
		Families: []measure.FamilyResult{
			{Family: "boundary", Trials: 3, Verdict: measure.Holds, MaxRatio: 1, Mode: "virtual"},
			{Family: "phases", Trials: 32, Verdict: measure.Violated, MaxRatio: 1.9, Mode: "virtual"},
		},
	}
	trace := &measure.Trace{AnchorUS: 1767225600000000, WindowMS: 60_000, Shrunk: true, FromRequests: 21, Replays: 31, Minimal: true,
		CSV: "counter-example.csv", Requests: []measure.Step{{AtUS: 0, Key: "user", Cost: 1, Allowed: true}}}
	var ds, found []measure.Evidence
	for _, at := range []int64{w - 11, w - 8, w - 2, w + 1000, w + 1001, w + 1002, w + 1003, w + 1004, w + 1005, w + 1006, w + 1007} {
		ds = append(ds, measure.Evidence{Key: "user", Cost: 1, AtUS: at})
		trace.Requests = append(trace.Requests, measure.Step{AtUS: at, Key: "user", Cost: 1, Allowed: true})
	}
	for i := int64(0); i < 19; i++ {
		at := w - 11 + i
		if i >= 9 {
			at = w + 1000 + i - 9
		}
		found = append(found, measure.Evidence{Key: "user", Cost: 1, AtUS: at})
	}
	r.CounterExample = &measure.CounterExample{Family: "phases", Trial: "probe at 0, L before and L after probe+W+1ms",
		Kind: measure.Violated, Accepted: 11, Limit: 10, StartUS: w - 11, EndUS: w + 1007, Decisions: ds, FromHit: true,
		Found: &measure.Found{Accepted: 19, StartUS: w - 11, EndUS: w + 1009, Ratio: 1.9, Requests: 21, Decisions: found},
		Explain: "worst found: 19 accepted within 1.02ms (less than the window 1m): 1.90x the limit of 10; shrunk to 12 requests " +
			"(minimal: no single request can be dropped): 11 accepted within 1.018ms (less than the window 1m): 1.10x the limit of 10",
		Trace: trace}
	return r
}

// Six is the fixture with the two peers added (gcra like reservoir,
// sliding-counter a little over the limit), as a demo's results.
func Six() *measure.Results {
	r := Run()
	r.Command = "demo"
	r.Config.Algorithms = append(r.Config.Algorithms, "gcra", "sliding-counter")
	var extra []measure.Row
	for _, row := range r.Results {
		if row.Algorithm != "reservoir" || row.Scenario != "boundary-burst" {
			continue
		}
		g := row
		g.Algorithm, g.LimitDesc = "gcra", "rate 50 per 10s, burst 50 (redis_rate GCRA; Redis TIME, ignores injected clocks)"
		c := row
		c.Algorithm, c.LimitDesc = "sliding-counter", "50 per 10s (weighted previous window)"
		c.MaxInWindow, c.Accepted, c.Ratio, c.Fidelity = 53, 53, 1.06, 1.06
		extra = append(extra, g, c)
	}
	r.Results = append(r.Results[:4], extra...) // boundary-burst only, six algorithms
	r.Config.Scenarios = []string{"boundary-burst"}
	return r
}

// Run is a complete run of 4 algorithms x 2 scenarios with plausible
// numbers: fixed-window lets 2x through at the boundary, bucketed-hash and
// reservoir a little more than L, sliding-log exactly L.
func Run() *measure.Results {
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
			Timeline(burstTimes, burstOffered, acc), mem[alg][0]))
	}
	for _, alg := range algs {
		acc := steadyOffered
		if alg == "bucketed-hash" {
			acc = steadyBH
		}
		n := acc[len(acc)-1]
		r.Results = append(r.Results, row(alg, "steady", 120, n, 40, 120, 14750,
			Timeline(steadyTimes, steadyOffered, acc), mem[alg][1]))
	}
	for i := range r.Results {
		r.Results[i].Trailing, r.Results[i].Worst = trailingOf(r.Results[i])
	}
	return r
}

// CheckImage fails unless path is a non-empty PNG or SVG, by its extension.
func CheckImage(t testing.TB, path string) {
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

// Replay is a traffic replay's results: two algorithms, per-key
// figures, a trailing series and malformed lines.
func Replay() *measure.Results {
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

// Bench is a compared bench of sliding-log on both paths.
func Bench() *measure.BenchResults {
	cdf := func(scale int64) []measure.CDFPoint {
		return []measure.CDFPoint{{Quantile: 0, US: 200 * scale}, {Quantile: 0.5, US: 800 * scale}, {Quantile: 0.9, US: 1500 * scale},
			{Quantile: 0.99, US: 3000 * scale}, {Quantile: 0.999, US: 6000 * scale}, {Quantile: 1, US: 9000 * scale}}
	}
	row := func(path string, per, rb float64, allowed int64, scale int64) measure.BenchRow {
		return measure.BenchRow{
			Algorithm: "sliding-log", Path: path, Clients: 50, Pipeline: 1, Keys: 100000, Limit: 100, WindowMS: 60000,
			LimitDesc: "100 per 1m0s", Decisions: 300000, Allowed: allowed, Denied: 300000 - allowed,
			DecisionsPerS: per, P50US: 800 * scale, P99US: 3000 * scale, P999US: 6000 * scale, MaxUS: 9000 * scale,
			ServerUSPerCall: 14.25, ServerCPUPct: 97, ClientCPUPct: 38,
			RedisBenchmarkPerS: rb, RedisBenchmarkServerUSPerCall: 14.5, RedisBenchmarkServerCPUPct: 98, RedisBenchmarkClientCPUPct: 31,
			VsRedisBenchmark: per / rb,
			Runs: []measure.BenchRun{
				{Tool: "ratelab", Decisions: 100000, Seconds: 1.6, PerS: per, ServerUSPerCall: 14.2, ServerCPUPct: 97, ClientCPUPct: 38, P50US: 800, P99US: 3000},
				{Tool: "redis-benchmark", Decisions: 100000, Seconds: 1.5, PerS: rb, ServerUSPerCall: 14.5, ServerCPUPct: 98, ClientCPUPct: 31, P50US: 780, P99US: 2900},
			},
			CDF: cdf(scale),
		}
	}
	return &measure.BenchResults{
		Header: measure.Header{Tool: "ratelab", Command: "bench",
			Redis:     measure.RedisInfo{Mode: "exec", Addr: "127.0.0.1:40123", Version: "7.0.15"},
			StartedAt: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), DurationMS: 31000, Complete: true},
		Config: measure.BenchRunConfig{
			Algorithms: []string{"sliding-log"}, Paths: []string{"allow", "deny"}, Limit: 100, WindowMS: 60000,
			Clients: 50, Pipeline: 1, DurationMS: 3000, Keys: 100000, Rounds: 3, Procs: 1,
			CompareRedisBenchmark: true, RedisBenchmark: "redis-benchmark 7.0.15", Prefix: "ratelab:t2:",
		},
		Results: []measure.BenchRow{
			row("allow", 61234.5, 60100, 300000, 1),
			row("deny", 70500, 80100, 300, 2),
		},
	}
}

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

// Timeline builds a Row timeline from times, offered and accepted cost.
func Timeline(times []float64, offered, accepted []int64) []measure.Point {
	pts := make([]measure.Point, len(times))
	for i := range times {
		pts[i] = measure.Point{TMS: times[i], Accepted: accepted[i], Denied: offered[i] - accepted[i]}
	}
	return pts
}

// trailingOf is the trailing-window series of a fixture row and its worst
// window split at the boundary (nil when nothing was accepted), from the
// accepted steps of its timeline.
func trailingOf(row measure.Row) ([]measure.WindowPoint, *measure.WindowSplit) {
	var ev []measure.Event
	var prev int64
	for _, p := range row.Timeline {
		if p.Accepted > prev {
			ev = append(ev, measure.Event{At: time.Duration(p.TMS * float64(time.Millisecond)), Cost: p.Accepted - prev})
		}
		prev = p.Accepted
	}
	w := time.Duration(row.WindowMS) * time.Millisecond
	var worst *measure.WindowSplit
	if maxIn, end := measure.MaxInWindow(ev, w); maxIn > 0 {
		s := measure.SplitWindow(ev, w, end)
		worst = &s
	}
	return measure.WindowSeries(ev, w, 0, 0), worst
}
