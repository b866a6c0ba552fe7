package engine_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// TestClusterClientSide: client-side limiters on a Redis Cluster (every
// key of a request in its hash slot, each client's connection to the
// master of that slot): the naive log is violated by the race family, the
// add-then-check twin holds, and no key is left behind.
func TestClusterClientSide(t *testing.T) {
	l := limit.Limit{Count: 20, Window: time.Minute}
	src, err := os.ReadFile(filepath.Join("..", "..", "custom", "clientside", "testdata", "add_then_check.lua"))
	if err != nil {
		t.Fatal(err)
	}
	naive, err := custom.NewSlidingLogNaive(cluster.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	safe, err := custom.NewClientSide(cluster.Client(), custom.ScriptConfig{Name: "add_then_check.lua", Source: string(src),
		Args: []string{"{limit}", "{window_us}", "{now_us}", "{request_id}"}, Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lim  algorithms.Limiter
		want measure.Verdict
	}{{naive, measure.Violated}, {safe, measure.Holds}} {
		runID := "cs" + string(c.want)
		rep, err := verify.Run(ctx, cluster.Redis, c.lim, verify.Config{Limits: []limit.Limit{l}, Seed: 1, RunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		race := measure.FamilyResult{}
		for _, f := range rep.Families {
			if f.Family == verify.RaceFamily {
				race = f
			}
		}
		if rep.Verdict != c.want || race.Verdict != c.want || rep.Errors > 0 {
			t.Errorf("%s on a Cluster: verdict %s, race family %s (%d trials), %d errors %v; want %s",
				c.lim.Name(), rep.Verdict, race.Verdict, race.Trials, rep.Errors, rep.ErrorSamples, c.want)
		}
		left, err := redistest.KeysByNode(ctx, cluster.Client(), "ratelab:"+runID+":")
		if err != nil {
			t.Fatal(err)
		}
		for node, n := range left {
			if n > 0 {
				t.Errorf("%s: %d keys left on %s", c.lim.Name(), n, node)
			}
		}
	}
}
