package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

// verify --out writes report.html with the counter-example drawn first
// and the families' worst ratios, and their PNG and SVG files.
func TestVerifyOutDrawsCounterExample(t *testing.T) {
	t.Parallel()
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	out := filepath.Join(t.TempDir(), "v")
	code, _, stderr := ratelab(t, "verify", "--algorithm", "fixed-window", "--limit", "20", "--window", "1m",
		"--redis", "redis://"+srv.Info.Addr, "--out", out)
	if code != exitFail {
		t.Fatalf("exit %d, want 1 (violated)\n%s", code, stderr)
	}
	for _, f := range []string{"counterexample-found.png", "counterexample-found.svg", "counterexample.png", "counterexample.svg", "families.png", "families.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() < 2000 {
			t.Errorf("%s: %v", f, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	found, ce, fam := bytes.Index(page, []byte(`<figure id="counterexample-found"`)), bytes.Index(page, []byte(`<figure id="counterexample"`)),
		bytes.Index(page, []byte(`<figure id="families">`))
	if found < 0 || ce < found || fam < ce {
		t.Errorf("report.html: the worst window as found at %d, shrunk at %d, families at %d; want all three in that order", found, ce, fam)
	}
	for _, want := range []string{"40 accepted within 39µs", "the window that broke", "limit L = 20"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
