package leftovers

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/measure"
)

func TestListing(t *testing.T) {
	started := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	runs := []measure.Leftover{
		{Prefix: "ratelab:a:", RunID: "a", Keys: []string{"ratelab:a:k1", "ratelab:a:k2"}, MemoryBytes: 100, Remove: true},
		{Prefix: "ratelab:b:", RunID: "b", Keys: []string{"ratelab:b:k"}, MemoryBytes: 50, Live: true,
			Record: &measure.RunRecord{RunID: "b", PID: 7, Host: "h", Started: started}},
		{Prefix: "ratelab:c:", RunID: "c", Keys: []string{"ratelab:c:k"}, MemoryBytes: 10},
	}
	cases := []struct {
		name    string
		runs    []measure.Leftover
		removed bool
		want    string
	}{
		{"none", nil, false, "no ratelab keys found\n"},
		{"dry run", runs, false, "ratelab:a:  2 keys  100 bytes  (e.g. ratelab:a:k1)\n" +
			"ratelab:b:  1 keys  50 bytes  (e.g. ratelab:b:k)  live run (pid 7 on h, started 2026-11-23 09:00:00Z): skipped\n" +
			"ratelab:c:  1 keys  10 bytes  (e.g. ratelab:c:k)  no run record (an older ratelab's run?): kept; --run c --yes removes it\n" +
			"2 keys would be removed (dry run: pass --yes to remove them)\n"},
		{"removed", runs[:1], true, "ratelab:a:  2 keys  100 bytes  (e.g. ratelab:a:k1)\nremoved 2 keys\n"},
	}
	for _, c := range cases {
		var b strings.Builder
		if err := writeLeftovers(&b, c.runs, c.removed, 2); err != nil || b.String() != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, b.String(), err, c.want)
		}
	}
}
