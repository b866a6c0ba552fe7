package verify_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// Every counter-example of the broken scripts replays: its trace, sent
// again to the same script on fresh keys, fails again the same way; the
// same trace sent to the corrected twin holds. A violation is shrunk.
func TestReplayCounterExamples(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
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
	lim, err := custom.NewScriptLimiter(srv.Client(), s.file, string(src), s.args, 1, limit.Limit{Count: 20, Window: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// slowDecode is a script limiter that stalls once, for stall, after the
// answers of its first round trip: the wall clock moves on between two
// calls of a trace, as on a loaded machine.
type slowDecode struct {
	algorithms.Scripted
	once  sync.Once
	stall time.Duration
}

func (s *slowDecode) Decode(c algorithms.ScriptCall, reply any) (algorithms.Decision, error) {
	s.once.Do(func() { time.Sleep(s.stall) })
	return s.Scripted.Decode(c, reply)
}

// A virtual-time replay never depends on the wall clock: a log kept in a
// key of another hash tag than the call's, with a TTL of one window (500
// ms), is there for the second burst of a trace whatever real time passed
// before it. The trace: L accepted at 10 ms, 300 denied at 11 ms (so the
// rest goes in a second round trip, after a stall of 700 ms of real time),
// L more at 300 ms, within one window of the first: denied, the
// trace holds. (Under load, such a key ran out on the wall clock between a
// greedy adversary's calls: VIOLATED 2.00x, which its replay did not
// reproduce.)
func TestReplayIgnoresWallClock(t *testing.T) {
	t.Parallel()
	l := limit.Limit{Count: 20, Window: 500 * time.Millisecond}
	var steps []measure.Step
	for i := range 340 {
		at := 10 * time.Millisecond
		switch {
		case i >= 320:
			at = 300 * time.Millisecond
		case i >= 20:
			at = 11 * time.Millisecond
		}
		steps = append(steps, measure.Step{AtUS: at.Microseconds(), Key: "user", Cost: 1})
	}
	ce := &measure.CounterExample{Family: "greedy", Trial: "two bursts", Kind: measure.Violated, Accepted: 40, Limit: 20,
		Trace: &measure.Trace{AnchorUS: harness.AlignUp(harness.VirtualEpoch, l.Window).UnixMicro(), WindowMS: l.Window.Milliseconds(), Requests: steps}}
	for _, stall := range []time.Duration{0, 700 * time.Millisecond} {
		lim := scriptLimiter(t, scriptRun{file: "other-tag-sliding-log.lua", args: nowWinLimID})
		rep, err := verify.Replay(ctx, srv.Redis, &slowDecode{Scripted: lim.(algorithms.Scripted), stall: stall}, verifyConfig(l), ce)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != measure.Holds || rep.Decisions != 340 {
			t.Errorf("stall %s: verdict %s after %d decisions, counter-example %+v; want holds after 340", stall, rep.Verdict, rep.Decisions, rep.CounterExample)
		}
	}
}
