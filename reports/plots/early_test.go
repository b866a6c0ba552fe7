package plots_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish"
	"github.com/ratelab/ratelab/reports/plots"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// toldEarly tells a plots.Early of r's scenarios in order, as a run does: the
// results growing one scenario at a time, each told once its rows are in.
// wait lets the drawing go on for a while after each.
func toldEarly(r *measure.Results, wait time.Duration) *plots.Early {
	e := plots.NewEarly()
	grown := *r
	grown.Results = nil
	var order []string
	for _, row := range r.Results {
		if !slices.Contains(order, row.Scenario) {
			order = append(order, row.Scenario)
		}
	}
	for _, sc := range order {
		for _, row := range r.Results {
			if row.Scenario == sc {
				grown.Results = append(grown.Results, row)
			}
		}
		e.Scenario(&grown, sc)
		time.Sleep(wait)
	}
	return e
}

// The directory of a run whose plots were drawn early holds the same files,
// byte for byte, as WriteDir's after the run: whether the early drawing
// finished, was under way or had not started when WriteDir began.
func TestEarlySameFiles(t *testing.T) {
	r := reportstest.Run()
	if testenv.Race() {
		r = firstScenario(r)
	}
	want := t.TempDir()
	if err := publish.WriteDir(want, r); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, wait := range []time.Duration{0, time.Millisecond, 200 * time.Millisecond} {
		got := t.TempDir()
		if err := publish.WriteResultsDir(got, toldEarly(r, wait).Of(r), false); err != nil {
			t.Fatal(err)
		}
		gotNames, _ := os.ReadDir(got)
		if len(gotNames) != len(names) {
			t.Errorf("wait %s: %d files, want %d", wait, len(gotNames), len(names))
		}
		for _, n := range names {
			a, _ := os.ReadFile(filepath.Join(want, n.Name()))
			b, err := os.ReadFile(filepath.Join(got, n.Name()))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("wait %s: %s differs from WriteDir's (%v)", wait, n.Name(), err)
			}
		}
	}
}

// Brief (a run stopped by Ctrl-C) writes results.json alone, whatever was
// drawn early; a nil plots.Early is WriteDir's.
func TestEarlyBriefAndNil(t *testing.T) {
	r := reportstest.Run()
	dir := t.TempDir()
	if err := publish.WriteResultsDir(dir, toldEarly(r, 0).Of(r), true); err != nil {
		t.Fatal(err)
	}
	if files, _ := os.ReadDir(dir); len(files) != 1 || files[0].Name() != "results.json" {
		t.Errorf("brief wrote %v, want results.json alone", files)
	}
	var e *plots.Early
	e.Scenario(r, "steady")
	if got := e.Of(r); got != any(r) {
		t.Errorf("nil plots.Early: Of = %T, want the results", got)
	}
}

// firstScenario is r with its first scenario only: under the race
// detector, where drawing a PNG costs about thirty times its usual CPU, the
// early drawing is watched on one scenario's plots.
func firstScenario(r *measure.Results) *measure.Results {
	small := *r
	small.Config.Scenarios = r.Config.Scenarios[:1]
	small.Results = nil
	for _, row := range r.Results {
		if row.Scenario == small.Config.Scenarios[0] {
			small.Results = append(small.Results, row)
		}
	}
	return &small
}
