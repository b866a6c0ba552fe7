package verifyjob

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish/ci"
	"github.com/ratelab/ratelab/targets"
)

// Each gives each of several targets a directory of its own and announces
// it, tallies a target that stopped before its report as its error, and
// stops at the next target once ctx is done.
func TestEach(t *testing.T) {
	errFail, errBroken := errors.New("fails"), errors.New("cannot connect")
	a := targets.Spec{Algorithm: "fixed-window", Name: "a"}
	b := targets.Spec{Algorithm: "sliding-log", Name: "b"}
	for _, c := range []struct {
		name     string
		specs    []targets.Spec
		out      string
		cancel   bool // ctx done before the second target
		wantDirs []string
		wantErrs int
		wantSaid bool // "ratelab: target" announced
	}{
		{"one", []targets.Spec{a}, "res", false, []string{"res"}, 1, false},
		{"several", []targets.Spec{a, b}, "res", false, []string{filepath.Join("res", "a"), filepath.Join("res", "b")}, 2, true},
		{"several, no out", []targets.Spec{a, b}, "", false, []string{"", ""}, 2, true},
		{"interrupted", []targets.Spec{a, b}, "res", true, []string{filepath.Join("res", "a")}, 1, true},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		var progress bytes.Buffer
		var suite ci.Suite
		var dirs []string
		errs := Each(ctx, c.specs, c.out, &progress, &suite, func(err error) bool { return err == errFail },
			func(s targets.Spec, out string) (*measure.VerifyReport, error) {
				dirs = append(dirs, out)
				if c.cancel {
					cancel()
				}
				if s.Name == "a" {
					return &measure.VerifyReport{Target: "a", Verdict: measure.Violated}, errFail
				}
				return nil, errBroken // stopped before its report
			})
		cancel()
		if !slices.Equal(dirs, c.wantDirs) || len(errs) != c.wantErrs || len(suite.Done) != len(c.wantDirs) {
			t.Errorf("%s: dirs %q, %d errors, %d done; want %q, %d", c.name, dirs, len(errs), len(suite.Done), c.wantDirs, c.wantErrs)
		}
		if said := bytes.Contains(progress.Bytes(), []byte("ratelab: target ")); said != c.wantSaid {
			t.Errorf("%s: announced %v, want %v: %q", c.name, said, c.wantSaid, progress.String())
		}
		for _, v := range suite.Done {
			if v.Report == nil {
				t.Errorf("%s: a target without a report", c.name)
			}
		}
		if _, failed := suite.Outcome(len(c.specs)); !failed {
			t.Errorf("%s: the failed target not tallied as failed", c.name)
		}
	}
}
