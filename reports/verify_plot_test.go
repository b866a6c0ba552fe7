package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed verification's directory holds the counter-example and the
// families drawn, and report.html shows the counter-example first; a
// verification that held draws no counter-example.
func TestWriteVerifyDirPlots(t *testing.T) {
	for _, violated := range []bool{true, false} {
		dir := t.TempDir()
		if err := WriteVerifyDir(dir, verifyFixture(violated)); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, "counterexample.svg"))
		if (err == nil) != violated {
			t.Errorf("violated %v: counterexample.svg: %v", violated, err)
		}
		for _, f := range []string{"families.png", "families.svg", "report.html"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("violated %v: %v", violated, err)
			}
		}
		page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
		ce, fam, tab := bytes.Index(page, []byte(`<figure id="counterexample">`)), bytes.Index(page, []byte(`<figure id="families">`)),
			bytes.Index(page, []byte(`<h2>Families</h2>`))
		if violated && !(ce >= 0 && ce < fam && fam < tab) {
			t.Errorf("report.html order: counter-example at %d, families at %d, table at %d; want the pictures first", ce, fam, tab)
		}
		if !violated && (ce >= 0 || fam < 0) {
			t.Errorf("a verification that held: counter-example figure at %d, families at %d", ce, fam)
		}
	}
}

// The counter-example's SVG has the limit line, the excess in red, the
// window that broke shaded and the sentence that explains it.
func TestPlotCounterExampleSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ce.svg")
	if err := PlotCounterExample(verifyFixture(true), path); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(path)
	s := string(svg)
	for _, want := range []string{"fixed-window: counter-example (violated), family boundary", "limit L = 7",
		"14 accepted within 13µs", "the window that broke", "(µs)", "fill:#CF0F0F", "fill:#7F7F7F"} {
		if !strings.Contains(s, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if err := PlotCounterExample(verifyFixture(false), path); err == nil {
		t.Error("no counter-example: no error")
	}
}

// Families without a ratio are left out; one that broke the property is
// vermillion.
func TestPlotFamiliesSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fam.svg")
	if err := PlotFamilies(verifyFixture(true), path); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(path)
	s := string(svg)
	for _, want := range []string{">boundary<", ">overload<", "2.00  violated", "1.00  holds", "fill:#D55E00", "fill:#009E73"} {
		if !strings.Contains(s, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	for _, bad := range []string{">isolation<", ">weighted<"} {
		if strings.Contains(s, bad) {
			t.Errorf("the SVG has %q, a family without a ratio", bad)
		}
	}
}
