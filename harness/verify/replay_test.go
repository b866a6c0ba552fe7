package verify_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// Every counter-example of the broken scripts replays: its trace, sent
// again to the same script on fresh keys, fails again the same way; the
// same trace sent to the corrected twin holds. A violation is shrunk.
func TestReplayCounterExamples(t *testing.T) {
	cases := []struct {
		broken, twin scriptRun
	}{
		{scriptRun{file: "epoch-fixed-window.lua", args: nowWinLim}, scriptRun{file: "sliding-log.lua", args: nowWinLimID}},
		{scriptRun{file: "anchored-fixed-window.lua", args: nowWinLim}, scriptRun{file: "sliding-log.lua", args: nowWinLimID}},
		{scriptRun{file: "time-as-member.lua", args: nowWinLim}, scriptRun{file: "sliding-log.lua", args: nowWinLimID}},
		{scriptRun{file: "records-denied.lua", args: nowWinLimID, gate: true}, scriptRun{file: "sliding-log.lua", args: nowWinLimID, gate: true}},
		{scriptRun{file: "short-ttl.lua", args: nowWinLimID}, scriptRun{file: "full-ttl.lua", args: nowWinLimID}},
		{scriptRun{file: "ignores-cost.lua", args: nowWinLimIDC}, scriptRun{file: "weighted-sliding-log.lua", args: nowWinLimIDC}},
		{scriptRun{file: "shared-key.lua", args: nowWinLimID, gate: true}, scriptRun{file: "sliding-log.lua", args: nowWinLimID, gate: true}},
		{scriptRun{file: "gcra-rounding.lua", args: nowWinLim}, scriptRun{file: "gcra.lua", args: nowWinLim}},
		// reads no clock: verified in virtual time through its key's TTL,
		// and replayed the same way
		{scriptRun{file: "fw-first-hit.lua", args: limWinMS}, scriptRun{file: "fw-push-out.lua", args: limWinMS}},
		// skewed client clocks: every limiter on the clients' clocks is
		// fooled by the same trace, so no twin
		{scriptRun{file: "sliding-log.lua", args: nowWinLimID, skew: 20 * time.Millisecond}, scriptRun{}},
	}
	for _, c := range cases {
		t.Run(c.broken.file, func(t *testing.T) {
			rep := verifyScript(t, c.broken)
			ce := rep.CounterExample
			if ce == nil || ce.Trace == nil || len(ce.Trace.Requests) == 0 {
				t.Fatalf("verdict %s: no counter-example with a trace: %+v", rep.Verdict, ce)
			}
			if ce.Kind == measure.Violated && (ce.Found == nil || !ce.Trace.Shrunk || len(ce.Trace.Requests) > ce.Found.Requests || ce.Ratio() <= 1) {
				t.Errorf("violation not shrunk, or shrunk to no violation: %+v found %+v", ce, ce.Found)
			}
			cfg := verifyConfig(limit.Limit{Count: 20, Window: 500 * time.Millisecond})
			if c.broken.gate {
				cfg.MinFidelity, cfg.CheckIsolation = 0.9, true
			}
			again, err := verify.Replay(ctx, srv.Redis, scriptLimiter(t, c.broken), cfg, ce)
			if err != nil {
				t.Fatal(err)
			}
			if again.Verdict != ce.Kind || again.CounterExample == nil || again.CounterExample.Accepted != ce.Accepted {
				t.Errorf("replay: verdict %s, counter-example %+v; want %s again with %d accepted", again.Verdict, again.CounterExample, ce.Kind, ce.Accepted)
			}
			if c.twin.file == "" {
				return
			}
			fixed, err := verify.Replay(ctx, srv.Redis, scriptLimiter(t, c.twin), cfg, ce)
			if err != nil {
				t.Fatal(err)
			}
			if fixed.Verdict != measure.Holds {
				t.Errorf("the trace against the corrected %s: verdict %s, counter-example %+v; want holds", c.twin.file, fixed.Verdict, fixed.CounterExample)
			}
		})
	}
}

// scriptLimiter is the limiter of s at 20 per 500ms (verifyScript's).
func scriptLimiter(t *testing.T, s scriptRun) algorithms.Limiter {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", s.file))
	if err != nil {
		t.Fatal(err)
	}
	lim, err := algorithms.NewScriptLimiter(srv.Client(), s.file, string(src), s.args, 1, limit.Limit{Count: 20, Window: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}
