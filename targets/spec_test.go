package targets_test

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// LimitsOr takes the caller's limits when given, else the spec's own.
func TestLimitsOr(t *testing.T) {
	own := []limit.Limit{{Count: 10, Window: time.Second}, {Count: 100, Window: time.Minute}}
	given := []limit.Limit{{Count: 5, Window: time.Second}}
	for _, c := range []struct {
		name    string
		spec    targets.Spec
		gave    bool
		want    int64 // Count of the first limit returned; 0 for none
		wantOwn bool
	}{
		{"given wins", targets.Spec{Limits: own}, true, 5, false},
		{"the file's", targets.Spec{Limits: own}, false, 10, true},
		{"none of its own", targets.Spec{}, false, 5, false},
	} {
		ls, isOwn := c.spec.LimitsOr(given, c.gave)
		if len(ls) == 0 || ls[0].Count != c.want || isOwn != c.wantOwn {
			t.Errorf("%s: got %v own %v, want first %d own %v", c.name, ls, isOwn, c.want, c.wantOwn)
		}
	}
	ls, _ := targets.Spec{Limits: own}.LimitsOr(nil, false)
	if ls[0].Precision = time.Millisecond; own[0].Precision != 0 {
		t.Errorf("LimitsOr shares the spec's limits; want a copy")
	}
}
