package publish

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratelab/ratelab/reports/reportstest"
)

// A failed verification's directory holds the counter-example and the
// families drawn, and report.html shows the counter-example first; a
// verification that held draws no counter-example.
func TestWriteVerifyDirPlots(t *testing.T) {
	for _, violated := range []bool{true, false} {
		dir := t.TempDir()
		if err := WriteVerifyDir(dir, reportstest.Verify(violated)); err != nil {
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
