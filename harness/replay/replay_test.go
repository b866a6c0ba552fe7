package replay_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/replay"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// scheduleCSV writes a schedule as a traffic CSV: Unix µs times with the
// anchor on a window boundary, the key and the cost.
func scheduleCSV(s scenarios.Schedule) string {
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("timestamp,key,cost\n")
	for _, a := range s.Arrivals {
		fmt.Fprintf(&b, "%d,%s,%d\n", t0.Add(a.At).UnixMicro(), a.Key, a.Cost)
	}
	return b.String()
}

// A scenario written out as traffic and replayed (pipelined, streamed) is
// decided exactly as the scenario run decides it.
func TestReplayDecidesAsTheScenarioRun(t *testing.T) {
	for _, name := range []string{"boundary-burst", "cron-regions", "overload"} {
		t.Run(name, func(t *testing.T) {
			sc, _ := scenarios.Get(name)
			p := sc.Defaults
			p.Seed = 1
			sched := sc.Build(p)
			ran, err := run.Run(ctx, srv.Redis, run.Config{Scenarios: []string{name}, Seed: 1}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			res, err := replay.Run(ctx, srv.Redis, strings.NewReader(scheduleCSV(sched)),
				replay.Config{Limit: limit.Limit{Count: p.Limit, Window: p.Window}, Pipeline: 7, Name: name},
				measure.NewDecisionLog(&log), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := rowsByAlgorithm(ran)
			if len(res.Results) != len(want) || len(res.Results) == 0 {
				t.Fatalf("%d rows, want %d", len(res.Results), len(want))
			}
			for _, r := range res.Results {
				w := want[r.Algorithm]
				if r.Offered != w.Offered || r.Accepted != w.Accepted || r.AcceptedRequests != w.AcceptedRequests ||
					r.MaxInWindow != w.MaxInWindow || r.Ideal != w.Ideal || r.Ratio != w.Ratio || r.Errors != 0 {
					t.Errorf("%s: replay offered %d accepted %d/%d max %d ideal %d; run %d %d/%d %d %d", r.Algorithm,
						r.Offered, r.Accepted, r.AcceptedRequests, r.MaxInWindow, r.Ideal,
						w.Offered, w.Accepted, w.AcceptedRequests, w.MaxInWindow, w.Ideal)
				}
				if r.PerKey == nil || r.PerKey.WorstMaxInWindow != r.MaxInWindow || len(r.Trailing) == 0 || r.MemoryBytes <= 0 {
					t.Errorf("%s: per key %+v, %d trailing points, memory %d", r.Algorithm, r.PerKey, len(r.Trailing), r.MemoryBytes)
				}
			}
			// the run's own notes, less the one on its latency sample (a replay
			// has none) and the one on its memory column (a replay has its own)
			runNotes := slices.DeleteFunc(slices.Clone(ran.Notes), func(n string) bool {
				return n == run.LatencyNote || n == run.MemoryNote(ran.Results)
			})
			if !slicesEqual(res.Notes[:min(len(res.Notes), len(runNotes))], runNotes) {
				t.Errorf("notes %q, want %q", res.Notes, runNotes)
			}
			if n := strings.Count(log.String(), "\n"); n != len(sched.Arrivals)*len(res.Results) {
				t.Errorf("%d decisions logged, want %d", n, len(sched.Arrivals)*len(res.Results))
			}
			if tr := res.Traffic; tr == nil || tr.Records != int64(len(sched.Arrivals)) || tr.Format != "csv" || tr.Malformed != 0 {
				t.Errorf("traffic %+v", res.Traffic)
			}
		})
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// Two keys: a heavy one that bursts across a boundary and a light one. Per
// key, only the heavy one exceeds the limit (under fixed-window) or is
// starved, and the light one never is.
func TestReplayPerKey(t *testing.T) {
	var b strings.Builder
	t0 := time.Date(2024, 3, 1, 0, 0, 10, 0, time.UTC)
	b.WriteString(`{"ts":"2024-03-01T00:00:00Z","user":"light"}` + "\n")
	for i := range 10 {
		fmt.Fprintf(&b, `{"ts":%q,"user":"heavy"}`+"\n", t0.Add(-time.Second+time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		fmt.Fprintf(&b, `{"ts":%q,"user":"heavy"}`+"\n", t0.Add(time.Second+time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
	}
	fmt.Fprintf(&b, `{"ts":%q,"user":"light"}`+"\n", t0.Add(3*time.Second).Format(time.RFC3339Nano))
	res, err := replay.Run(ctx, srv.Redis, strings.NewReader(b.String()), replay.Config{
		Algorithms: []string{"fixed-window", "sliding-log"}, Limit: limit.Limit{Count: 10, Window: 10 * time.Second},
		Traffic: scenarios.TrafficOptions{TimeField: "ts", KeyField: "user"},
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsByAlgorithm(res)
	fw, sl := rows["fixed-window"].PerKey, rows["sliding-log"].PerKey
	if fw.Keys != 2 || fw.KeysOver != 1 || fw.WorstKey != "heavy" || fw.WorstRatio != 2 || fw.Starved != 0 {
		t.Errorf("fixed-window per key %+v", fw)
	}
	if sl.Keys != 2 || sl.KeysOver != 0 || sl.WorstRatio != 1 || sl.Starved != 0 {
		t.Errorf("sliding-log per key %+v", sl)
	}
	if res.Traffic.Keys != 2 || res.Traffic.Format != "jsonl" || res.Config.Scenarios[0] != "traffic" {
		t.Errorf("traffic %+v scenarios %v", res.Traffic, res.Config.Scenarios)
	}
	// the Redis ceiling: INFO cpu of the one server, over the replay's time
	if tr := res.Traffic; tr.RedisCores != 1 || tr.ReplayS <= 0 || tr.RedisCPUS <= 0 || tr.CeilingFraction() <= 0 {
		t.Errorf("Redis CPU %v s in %v s on %d nodes", tr.RedisCPUS, tr.ReplayS, tr.RedisCores)
	}
}

// Malformed lines are counted and shown with their line numbers, and the
// replay goes on; Strict stops at the first; a file without a valid record
// or without any line is a field error naming the traffic.
func TestReplayMalformed(t *testing.T) {
	data := "timestamp,key,cost\n1700000000,a,1\nnot-a-time,a,1\n1700000001,b,5\n1700000002,,1\n1700000003,a,1\n"
	var progress bytes.Buffer
	cfg := replay.Config{Algorithms: []string{"sliding-log"}, Limit: limit.Limit{Count: 3, Window: time.Second}, Source: "t.csv"}
	res, err := replay.Run(ctx, srv.Redis, strings.NewReader(data), cfg, nil, &progress)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Traffic
	if tr.Records != 2 || tr.Malformed != 3 || len(tr.Examples) != 3 {
		t.Fatalf("traffic %+v", tr)
	}
	for i, line := range []int64{3, 4, 5} {
		if tr.Examples[i].Line != line {
			t.Errorf("example %d: %+v, want line %d", i, tr.Examples[i], line)
		}
	}
	if !strings.Contains(tr.Examples[1].Reason, "above the limit") ||
		!strings.Contains(progress.String(), "t.csv: line 3: ") {
		t.Errorf("examples %+v; progress:\n%s", tr.Examples, progress.String())
	}
	if r := res.Results[0]; r.Requests != 2 || r.Accepted != 2 {
		t.Errorf("row %+v", r)
	}

	cfg.Traffic.Strict = true
	res, err = replay.Run(ctx, srv.Redis, strings.NewReader(data), cfg, nil, nil)
	// the first record is read ahead (reordering), so line 3 stops the
	// replay before any decision: no results
	if name, _ := field.Name(err); name != "traffic" || !strings.Contains(err.Error(), "line 3") || res != nil {
		t.Errorf("strict: %v, %v", err, res)
	}
	// a malformed line further on stops a replay under way: results incomplete
	late := data + strings.Repeat("1700000010,a,1\n", 3) + "1700000020,a,x\n"
	cfg.Traffic.Strict, cfg.Traffic.ReorderWindow = true, -1
	res, err = replay.Run(ctx, srv.Redis, strings.NewReader(strings.Replace(late, "not-a-time,a,1\n", "", 1)), cfg, nil, nil)
	if name, _ := field.Name(err); name != "traffic" || res == nil || res.Complete || !strings.Contains(res.Error, "line") {
		t.Errorf("strict, late: %v, %+v", err, res)
	}
	cfg.Traffic.ReorderWindow = 0

	for _, tc := range []struct{ name, data string }{
		{"empty", ""}, {"blank lines", "\n\n  \n"}, {"no valid record", "timestamp,key\nx,a\ny,b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := replay.Run(ctx, srv.Redis, strings.NewReader(tc.data), cfg, nil, nil)
			name, _ := field.Name(err)
			if res != nil || name != "traffic" || !strings.Contains(err.Error(), "t.csv") {
				t.Errorf("got %v, %v", res, err)
			}
		})
	}
}

func TestReplayValidate(t *testing.T) {
	ok := replay.Config{Limit: limit.Limit{Count: 10, Window: time.Second}}
	for _, tc := range []struct {
		field string
		edit  func(*replay.Config)
	}{
		{"limit", func(c *replay.Config) { c.Limit.Count = 0 }},
		{"window", func(c *replay.Config) { c.Limit.Window = 0 }},
		{"window", func(c *replay.Config) { c.Limit.Window = 11 * 365 * 24 * time.Hour }},
		{"cost", func(c *replay.Config) { c.Cost = 11 }},
		{"algorithms", func(c *replay.Config) { c.Algorithms = []string{"nope"} }},
		{"pipeline", func(c *replay.Config) { c.Pipeline = -1 }},
		{"on-error", func(c *replay.Config) { c.OnError = "maybe" }},
		{"traffic-format", func(c *replay.Config) { c.Traffic.Format = "xml" }},
		{"time-unit", func(c *replay.Config) { c.Traffic.TimeUnit = "days" }},
	} {
		cfg := ok
		tc.edit(&cfg)
		if name, _ := field.Name(cfg.Validate()); name != tc.field {
			t.Errorf("%s: got %v", tc.field, cfg.Validate())
		}
	}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}

// A gzip-compressed access log replays; progress lines go to a non-terminal.
func TestReplayGzipAccessLog(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if err := scenarios.GenerateAccessLog(zw, scenarios.GenOptions{Lines: 5000, Keys: 200, HeavyKeys: 2, CronKeys: 10, Duration: 10 * time.Minute, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	res, err := replay.Run(ctx, srv.Redis, &z, replay.Config{Limit: limit.Limit{Count: 20, Window: time.Minute}, Source: "access.log.gz"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Traffic.Gzip || res.Traffic.Format != "access-log" || res.Traffic.Records != 5000 || res.Traffic.Keys != 200 {
		t.Errorf("traffic %+v", res.Traffic)
	}
	for _, r := range res.Results {
		if r.PerKey.Keys != 200 || r.Requests != 5000 || r.PerKey.PeakMemoryBytes < r.MemoryBytes/2 || r.PerKey.MemorySamples < 3 {
			t.Errorf("%s: requests %d per key %+v memory %d", r.Algorithm, r.Requests, r.PerKey, r.MemoryBytes)
		}
	}
	// keys the calls named and whose TTL ran out in virtual time were
	// removed; those a script derives stay, and a note says so
	if sl := rowsByAlgorithm(res)["sliding-log"]; sl.Keys > sl.PerKey.Keys || sl.Keys == 0 {
		t.Errorf("sliding-log: %d keys left for %d client keys", sl.Keys, sl.PerKey.Keys)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "memory of fixed-window, sliding-counter: counts keys of windows long past") {
		t.Errorf("notes: %q", res.Notes)
	}
	if rows := rowsByAlgorithm(res); rows["sliding-log"].PerKey.KeysOver != 0 || rows["sliding-log"].PerKey.Starved != 0 {
		t.Errorf("sliding-log is the exact log: %+v", rows["sliding-log"].PerKey)
	}
	data, _ := json.Marshal(res)
	if !bytes.Contains(data, []byte(`"per_key"`)) || !bytes.Contains(data, []byte(`"trailing"`)) {
		t.Error("results.json lacks per_key or trailing")
	}
}

// flushingReader hands out at most 256 bytes per Read and sends SCRIPT
// FLUSH before each Read after the first few, so the replay's pipelines
// keep meeting NOSCRIPT.
type flushingReader struct {
	r       *strings.Reader
	reads   int
	flushes int
}

func (f *flushingReader) Read(p []byte) (int, error) {
	if f.reads++; f.reads > 4 && srv.Client().ScriptFlush(ctx).Err() == nil {
		f.flushes++
	}
	return f.r.Read(p[:min(len(p), 256)])
}

// Replay pipelines through algorithms.ScriptPipe, so a
// SCRIPT FLUSH while it runs costs no decision: every call refused with
// NOSCRIPT is loaded and resent, and the replay decides as without flushes.
func TestReplaySurvivesScriptFlush(t *testing.T) {
	sc, _ := scenarios.Get("overload")
	p := sc.Defaults
	p.Seed = 1
	csv := scheduleCSV(sc.Build(p))
	cfg := replay.Config{Limit: limit.Limit{Count: p.Limit, Window: p.Window}, Pipeline: 7, Name: "overload"}
	want, err := replay.Run(ctx, srv.Redis, strings.NewReader(csv), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fr := &flushingReader{r: strings.NewReader(csv)}
	got, err := replay.Run(ctx, srv.Redis, fr, cfg, nil, nil)
	if err != nil {
		t.Fatalf("after %d SCRIPT FLUSH: %v", fr.flushes, err)
	}
	if fr.flushes < 10 {
		t.Fatalf("only %d SCRIPT FLUSH", fr.flushes)
	}
	w := rowsByAlgorithm(want)
	for _, r := range got.Results {
		if r.Errors != 0 || r.Accepted != w[r.Algorithm].Accepted || r.Offered != w[r.Algorithm].Offered {
			t.Errorf("%s: %d errors, accepted %d of %d; without flushes %d of %d", r.Algorithm, r.Errors,
				r.Accepted, r.Offered, w[r.Algorithm].Accepted, w[r.Algorithm].Offered)
		}
	}
	t.Logf("%d SCRIPT FLUSH, %d bytes of traffic", fr.flushes, len(csv))
}
