package verify_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// bucketArgs are a token bucket's: capacity L/2, refilled L/2 per window
// (at most L in any window), cost 1.
var bucketArgs = []string{"{now_us}", "{limit / 2}", "{limit / 2 / window_s}", "1"}

// blockArgs are a first-hit window's with a block key: limit, window and
// block duration (a window), in ms; nowMSWinLim a counter's on a ms clock.
var (
	blockArgs   = []string{"{limit}", "{window_ms}", "{window_ms}"}
	nowMSWinLim = []string{"{now_ms}", "{window_ms}", "{limit}"}
)

// verifyAt verifies testdata script file with args at count per w.
func verifyAt(t *testing.T, file string, args []string, count int64, w time.Duration, budget time.Duration) *measure.VerifyReport {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	l := limit.Limit{Count: count, Window: w}
	lim, err := custom.NewScriptLimiter(srv.Client(), file, string(src), args, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verifyConfig(l)
	cfg.Budget = budget
	// a loaded test machine may take long over a call: no call error here
	cfg.Timeout, cfg.MaxOutage = 5*time.Second, 10*time.Second
	rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 {
		t.Fatalf("%s: %d errors: %v", file, rep.Errors, rep.ErrorSamples)
	}
	return rep
}

// The adversaries that adapt and search: each broken
// shape is caught by the family named, at least as badly as said, and its
// corrected twin holds.
func TestVerifyAdaptiveAdversaries(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	cases := []struct {
		name     string
		broken   string
		twin     string
		args     []string
		count    int64
		window   time.Duration
		family   string
		severity float64 // the family's max in W / limit on the broken one, at least
	}{
		// a penalty (blocked for a window after an overrun): only a client
		// that never overruns reaches L-1 + L
		{"penalty", "penalty-fixed-window.lua", "penalty-sliding-log.lua", nowWinLim, 20, time.Minute, "cautious", 1.9},
		// a key dropped after 2 s idle comes back full: bursts 2 s apart
		{"expiring bucket", "expiring-bucket.lua", "bucket-ttl-to-full.lua", bucketArgs, 60, time.Minute, "expiry", 10},
		// 500 ms early: the dense family's ladder finds it at any window
		{"early bucket 1m", "early-bucket.lua", "exact-bucket.lua", nowWinLim, 20, time.Minute, "dense", 1.05},
		{"early bucket 1h", "early-bucket.lua", "exact-bucket.lua", nowWinLim, 20, time.Hour, "dense", 1.05},
		// a first-hit window with a block key: never overrun, a probe finds
		// the window's end; 119 of 60 reachable (1.98x), 0.95 of it is 1.88x
		{"first-hit block 1m", "first-hit-block.lua", "block-sliding-log.lua", blockArgs, 60, time.Minute, "cautious", 1.89},
		{"first-hit block 1h", "first-hit-block.lua", "block-sliding-log.lua", blockArgs, 60, time.Hour, "cautious", 1.89},
		// a weighted counter that counts denied requests and says nothing
		// of when to retry: 20 of 10 reachable (2.00x), found by a probe
		{"weighted counter 1m", "floored-window-counter.lua", "last-hit-window-counter.lua", nowMSWinLim, 10, time.Minute, "greedy", 1.9},
		{"weighted counter 1h", "floored-window-counter.lua", "last-hit-window-counter.lua", nowMSWinLim, 10, time.Hour, "greedy", 1.9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			switch c.twin {
			case "penalty-sliding-log.lua":
				args = nowWinLimID
			case "block-sliding-log.lua":
				args = append(append([]string{}, blockArgs...), "{request_id}")
			}
			b := verifyAt(t, c.broken, c.args, c.count, c.window, 0)
			f := family(t, b, c.family)
			if b.Verdict != measure.Violated || f.Verdict != measure.Violated || f.MaxRatio < c.severity {
				t.Errorf("broken %s: verdict %s, family %s %s at %.2fx; want violated at >= %.2fx", c.broken, b.Verdict, c.family, f.Verdict, f.MaxRatio, c.severity)
			}
			tw := verifyAt(t, c.twin, args, c.count, c.window, 0)
			if tw.Verdict != measure.Holds {
				t.Errorf("twin %s: verdict %s, counter-example %+v", c.twin, tw.Verdict, tw.CounterExample)
			}
		})
	}
}

// The search is bounded by a call count: the same seed and budget find the
// same worst ratio, however fast the machine runs; a negative budget runs
// no search.
func TestVerifySearchDeterministic(t *testing.T) {
	t.Parallel()
	var ratios []float64
	var decisions []int64
	for range 2 {
		rep := verifyAt(t, "epoch-fixed-window.lua", nowWinLim, 20, time.Minute, 500*time.Millisecond)
		f := family(t, rep, "search")
		if f.Trials != 1 {
			t.Fatalf("search family %+v: want one trial", f)
		}
		ratios, decisions = append(ratios, f.MaxRatio), append(decisions, rep.Decisions)
	}
	// a fixed window admits L before and L after its boundary
	if ratios[0] != ratios[1] || decisions[0] != decisions[1] || ratios[0] < 2 {
		t.Errorf("search ratios %v, decisions %v: want the same twice, at least 2x", ratios, decisions)
	}
	off := verifyAt(t, "exact-bucket.lua", nowWinLim, 20, time.Minute, -1)
	if f := family(t, off, "search"); f.Trials != 0 || f.Verdict != measure.Skipped {
		t.Errorf("budget -1: search family %+v, want skipped", f)
	}
}
