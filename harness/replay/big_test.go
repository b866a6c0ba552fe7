package replay_test

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/replay"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// The big replay (make replay-big): a generated 24 h
// access log of 10^6 lines from 10^4 keys (a few heavy ones, cron bursts at
// round minutes), streamed through a pipe into every algorithm that takes
// virtual time, decisions logged to /dev/null-like discard. Behind
// RATELAB_BIG: it takes minutes.
func TestReplayBig(t *testing.T) {
	if os.Getenv("RATELAB_BIG") == "" {
		t.Skip("set RATELAB_BIG=1 (make replay-big)")
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(scenarios.GenerateAccessLog(pw, scenarios.GenOptions{Seed: 1})) }()
	start := time.Now()
	res, err := replay.Run(ctx, srv.Redis, pr, replay.Config{Limit: limit.Limit{Count: 100, Window: time.Minute}, Source: "generated 24h access log"},
		measure.NewDecisionLog(io.Discard), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	tr := res.Traffic
	t.Logf("%d records, %d keys, %d decisions in %s: %.0f decisions/s, peak RSS %d MiB",
		tr.Records, tr.Keys, tr.Decisions, wall.Round(time.Millisecond), tr.DecisionsPerSec, tr.PeakRSSBytes>>20)
	for _, r := range res.Results {
		p := r.PerKey
		t.Logf("%-15s accepted %d/%d keys over %d worst %s %.2f starved %d (%d keys) peak mem %d end mem %d",
			r.Algorithm, r.Accepted, r.Offered, p.KeysOver, p.WorstKey, p.WorstRatio, p.Starved, p.StarvedKeys, p.PeakMemoryBytes, r.MemoryBytes)
		if r.Requests != 1_000_000 || p.Keys != 10_000 {
			t.Errorf("%s: %d requests from %d keys", r.Algorithm, r.Requests, p.Keys)
		}
	}
	if tr.PeakRSSBytes > 1<<30 {
		t.Errorf("peak RSS %d MiB", tr.PeakRSSBytes>>20)
	}
}
