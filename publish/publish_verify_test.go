package publish

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// FinishVerify leaves the whole record of a verdict, and verify.json marked
// incomplete of a run that stopped; dir "" writes nothing.
func TestFinishVerify(t *testing.T) {
	stopped := errors.New("calls keep failing")
	incomplete := func(err error) *measure.VerifyReport {
		return &measure.VerifyReport{Target: "fixed-window", Header: measure.Header{Error: err.Error()}}
	}
	for _, c := range []struct {
		name   string
		dir    bool
		runErr error
		files  string // the files of dir, sorted
	}{
		{"verdict", true, nil, "decisions.jsonl families.png families.svg report.html verify.json"},
		{"stopped", true, stopped, "decisions.jsonl verify.json"},
		{"no dir", false, stopped, ""},
	} {
		dir, out := t.TempDir(), ""
		var log *measure.DecisionLog
		if c.dir {
			out = dir
			var err error
			if log, err = outdir.CreateDecisionLog(dir); err != nil {
				t.Fatal(err)
			}
		}
		runErr, werr := outdir.Split(FinishVerify(out, log, reportstest.Verify(false), c.runErr, incomplete))
		if runErr != c.runErr || werr != nil {
			t.Errorf("%s: got %v, %v; want %v, nil", c.name, runErr, werr, c.runErr)
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != c.files {
			t.Errorf("%s: files %q, want %q", c.name, got, c.files)
		}
		if c.runErr != nil && c.dir {
			if b, _ := os.ReadFile(filepath.Join(dir, "verify.json")); !strings.Contains(string(b), stopped.Error()) {
				t.Errorf("%s: verify.json misses why it stopped:\n%s", c.name, b)
			}
		}
	}
}
