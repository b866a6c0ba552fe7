package verifyjob

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/reports"
)

// A violated fixed window leaves verify.json, report.html and the
// counter-example's trace (named in the report) in Out, the decision file
// beside; an Out that cannot be created is an error naming "out" before
// anything runs.
func TestRun(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start()
	defer srv.Close()
	rd := srv.Redis
	cfg := verify.Config{Limits: []limit.Limit{{Count: 10, Window: time.Second}}, Seed: 1, Budget: -1}
	lim, err := algorithms.New("fixed-window", rd.Client, cfg.Primary())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	target := &measure.TargetSpec{Algorithm: "fixed-window"}
	job := Job{Config: cfg, Target: target, Out: out, Decisions: filepath.Join(dir, "d.jsonl")}
	rep, err := job.Run(ctx, rd, lim, nil)
	if err != nil || rep.Verdict != measure.Violated || rep.TargetSpec != target {
		t.Fatalf("got %v, %v", rep, err)
	}
	for _, name := range []string{"verify.json", "report.html", TraceCSV, "../d.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if rep.CounterExample.Trace.CSV != TraceCSV {
		t.Errorf("trace file %q, want %q", rep.CounterExample.Trace.CSV, TraceCSV)
	}
	job.Out = filepath.Join(out, "verify.json", "x") // below a file
	if _, err := job.Run(ctx, rd, lim, nil); err == nil {
		t.Error("an Out below a file: no error")
	} else if run, werr := outdir.Split(err); run != nil || werr == nil {
		t.Errorf("an Out below a file: %v is not a write error alone", err)
	} else if name, _ := field.Name(werr); name != "out" {
		t.Errorf("%v names %q, want out", werr, name)
	}
}

// ReadReplay takes a record with a traced counter-example; one that holds
// or has no trace is ErrNothingToReplay, saying why; ReplayConfig takes
// the record's limits and seed.
func TestReadReplay(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r *measure.VerifyReport) string {
		p := filepath.Join(dir, name)
		if err := outdir.WriteFile(p, func(w io.Writer) error { return reports.Render(w, reports.JSON, r) }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ls := []limit.Limit{{Count: 10, Window: time.Second}}
	holds := &measure.VerifyReport{Verdict: measure.Holds, Families: []measure.FamilyResult{}}
	holds.SchemaVersion = measure.SchemaVersion
	untraced := *holds
	untraced.CounterExample = &measure.CounterExample{}
	traced := *holds
	traced.CounterExample = &measure.CounterExample{Trace: &measure.Trace{}}
	traced.Repro.Limits, traced.Repro.Seed = ls, 7
	for _, tc := range []struct {
		name, want string
		rec        *measure.VerifyReport
	}{
		{"holds", "nothing to replay: it holds", holds},
		{"no trace", "nothing to replay: its counter-example has no trace", &untraced},
		{"traced", "", &traced},
	} {
		rec, err := ReadReplay(write(tc.name+".json", tc.rec))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrNothingToReplay) || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		case tc.want == "":
			cfg, err := ReplayConfig(rec, verify.Config{Clients: 8, Timeout: time.Second, MaxOutage: time.Second})
			if err != nil || cfg.Seed != 7 || len(cfg.Limits) != 1 || cfg.Limits[0] != ls[0] {
				t.Errorf("%s: config %+v, %v", tc.name, cfg, err)
			}
		}
	}
}
