package publish_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish"
	"github.com/ratelab/ratelab/reports"
)

// decisionRecords is a replay-like stream: two algorithms interleaved in
// batches, 500 keys of which a few are hot, costs mostly 1, times rising
// with jitter (sent times not monotonic across streams), a few errors.
func decisionRecords(n int) []measure.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	const base = 1_767_225_600_000_000 // 2026-01-01 in Unix µs
	var out []measure.Record
	sent := int64(1_790_000_000_000_000)
	for i := 0; i < n; i++ {
		alg := []string{"sliding-log", "fixed-window"}[(i/64)%2]
		seq := i/128*64 + i%64
		at := int64(seq) * 1_000
		key := "10.0." + string(rune('0'+rng.IntN(10))) + "." + strings.Repeat("1", 1+rng.IntN(3))
		if rng.IntN(4) == 0 {
			key = "203.0.113.7"
		}
		r := measure.Record{Algorithm: alg, Scenario: "traffic", Seq: seq, Key: key, Cost: 1, AtUS: at,
			SentUS: sent + int64(rng.IntN(200)) - 100, DecidedAtUS: base + at, Allowed: rng.IntN(3) > 0, Remaining: int64(rng.IntN(100))}
		if i%97 == 0 {
			r.Cost = 5
		}
		if !r.Allowed {
			r.RetryAfterUS = int64(rng.IntN(60_000_000))
		}
		if i%499 == 0 {
			r.Error = "sliding-log: context deadline exceeded\tafter \"5s\"\n"
			r.Client = 3
		}
		r.RecvUS = r.SentUS + int64(rng.IntN(900))
		r.LatencyUS = r.RecvUS - r.SentUS
		sent += int64(rng.IntN(50))
		out = append(out, r)
	}
	return out
}

// Every name's encoding reads back record for record; the formats are
// those the name says.
func TestDecisionFileRoundTrip(t *testing.T) {
	recs := decisionRecords(5000)
	for _, c := range []struct {
		name        string
		json        bool
		compression string
	}{
		{"decisions.jsonl", true, ""},
		{"decisions.jsonl.gz", true, "gzip"},
		{"decisions.jsonl.zst", true, "zstd"},
		{"decisions.txt", false, ""},
		{"decisions.gz", false, "gzip"},
		{"d.ZST", false, "zstd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if j, comp := publish.DecisionFileFormat(c.name); j != c.json || comp != c.compression {
				t.Errorf("format %v %q, want %v %q", j, comp, c.json, c.compression)
			}
			path := filepath.Join(t.TempDir(), c.name)
			log, err := publish.CreateDecisionFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				if err := log.Write(&recs[i]); err != nil {
					t.Fatal(err)
				}
				if i == 2500 {
					if err := log.Flush(); err != nil { // a flush mid-stream ends a block, not the stream
						t.Fatal(err)
					}
				}
			}
			if err := log.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []measure.Record
			if err := reports.ReadDecisions(f, func(r measure.Record) error { got = append(got, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(recs) {
				t.Fatalf("%d records read, want %d", len(got), len(recs))
			}
			for i := range recs {
				if !reflect.DeepEqual(got[i], recs[i]) {
					t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], recs[i])
				}
			}
		})
	}
}

// The compact encoding compressed with zstd keeps a replay's decisions
// within 30 B each, a tenth of plain JSON lines or less.
func TestDecisionFileSize(t *testing.T) {
	testenv.SkipUnderRace(t)
	recs := decisionRecords(50_000)
	size := func(name string) float64 {
		path := filepath.Join(t.TempDir(), name)
		log, err := publish.CreateDecisionFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			_ = log.Write(&recs[i])
		}
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return float64(st.Size()) / float64(len(recs))
	}
	zst, plain := size("d.zst"), size("d.jsonl")
	t.Logf("bytes per decision: compact+zstd %.1f, compact %.1f, compact+gzip %.1f, jsonl %.1f, jsonl+zstd %.1f",
		zst, size("d.txt"), size("d.gz"), plain, size("d.jsonl.zst"))
	if zst > 30 || zst > plain/10 {
		t.Errorf("compact+zstd %.1f B per decision, want <= 30 and <= a tenth of JSON lines' %.1f", zst, plain)
	}
}

// A file that cannot be created names the flag's field; a damaged compact
// line names its line.
func TestDecisionFileErrors(t *testing.T) {
	_, err := publish.CreateDecisionFile(filepath.Join(t.TempDir(), "missing", "d.zst"))
	if err == nil || !strings.Contains(err.Error(), "decisions") {
		t.Errorf("create in a missing directory: %v, want an error naming decisions", err)
	}
	bad := reports.CompactHeader + "\nS\t0\t\"a\"\t\"s\"\nK\t0\t\"k\"\n0\t\t\t7\n"
	err = reports.ReadDecisions(strings.NewReader(bad), func(measure.Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("undefined key: %v, want an error naming line 4", err)
	}
	stop := errors.New("stop")
	good := reports.CompactHeader + "\nS\t0\t\"a\"\t\"s\"\nK\t0\t\"k\"\n0\n0\n"
	n := 0
	err = reports.ReadDecisions(strings.NewReader(good), func(measure.Record) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("fn's error: %v after %d records, want stop after 1", err, n)
	}
}
