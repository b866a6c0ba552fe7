package publish

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/plots"
	"github.com/ratelab/ratelab/reports/reportstest"
)

var plotsDir = flag.String("plots", "", "also write the fixture's run directory (plots, report.md) here, to look at")

func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "1")
	if *plotsDir != "" {
		dir = *plotsDir
	}
	r := reportstest.Run()
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
		reportstest.CheckImage(t, path)
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
	r := reportstest.Run()
	if err := WriteDir(dir, r); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	alone := t.TempDir()
	var files []string
	for _, sc := range []string{"boundary-burst", "steady"} {
		for _, ext := range []string{".png", ".svg"} {
			name := "timeline-" + sc + ext
			if err := plots.PlotTimeline(r, sc, filepath.Join(alone, name)); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		}
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := plots.PlotRatio(r, filepath.Join(alone, "ratio"+ext)); err != nil {
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
