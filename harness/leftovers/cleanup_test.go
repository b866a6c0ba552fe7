package leftovers

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// An empty Redis has nothing to clean; a run that left keys and no record
// is kept unless named (--run), then removed.
func TestRun(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start()
	defer srv.Close()
	rd := srv.Redis
	for i, tc := range []struct {
		setup  func()
		cfg    CleanConfig
		remove bool
		want   string
	}{
		{func() {}, CleanConfig{}, true, "no ratelab keys found\n"},
		{func() { rd.Client.Set(ctx, server.KeyPrefix+"20261122T030515-cfab:k", "1", 0) }, CleanConfig{}, true, "kept"},
		{func() {}, CleanConfig{Run: "20261122T030515-cfab"}, true, "removed 1 keys\n"},
		{func() {}, CleanConfig{}, false, "no ratelab keys found\n"},
	} {
		tc.setup()
		var w bytes.Buffer
		live, err := Run(ctx, rd, tc.cfg, tc.remove, &w)
		if err != nil || live || !strings.Contains(w.String(), tc.want) {
			t.Errorf("step %d: got %q, live %v, %v; want %q", i, w.String(), live, err, tc.want)
		}
	}
}
