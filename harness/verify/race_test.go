package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// twin reads a client-side twin script of custom/clientside/testdata.
func twin(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "custom", "clientside", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	logArgs    = []string{"{limit}", "{window_us}", "{now_us}", "{request_id}"}
	windowKeys = []string{"{key}:{floor(now_ms / window_ms)}"}
	windowArgs = []string{"{limit}", "{window_ms}", "{cost}"}
)

// TestRaceTwins verifies each client-side shape's broken and corrected
// twin at 20 per minute, atomically and client-side: the verdict, and the
// race family's (skipped: not run, for an atomic script).
func TestRaceTwins(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	l := limit.Limit{Count: 20, Window: time.Minute}
	cases := []struct {
		script     string
		keys, args []string
		clientSide bool
		want       measure.Verdict
		race       measure.Verdict // "" when the family must not run
		raceRatio  float64         // the race family's max ratio, when race is set and > 0
	}{
		// check then act: correct as one script, raced when its commands are separate
		{"check_then_act.lua", nil, logArgs, false, measure.Holds, "", 0},
		{"check_then_act.lua", nil, logArgs, true, measure.Violated, measure.Violated, 0},
		// add then check with take-back: holds under every schedule; with the
		// timestamp as member it breaks either way
		{"add_then_check.lua", nil, logArgs, true, measure.Holds, measure.Holds, 0},
		{"add_then_check_timestamp_member.lua", nil, logArgs, true, measure.Violated, measure.Violated, 0},
		// MULTI/EXEC: with WATCH it holds, without it the count is stale
		{"watch_multi.lua", nil, logArgs, true, measure.Holds, measure.Holds, 0},
		{"multi_no_watch.lua", nil, logArgs, true, measure.Violated, measure.Violated, 0},
		// pipelined INCRBY+PEXPIRE: the fixed window's 2x at the boundary, no
		// race (1.00 in the race family); GET then INCRBY races
		{"fixed_window_pipeline.lua", windowKeys, windowArgs, true, measure.Violated, measure.Holds, 1},
		{"fixed_window_get_incr.lua", windowKeys, windowArgs, true, measure.Violated, measure.Violated, 0},
	}
	for _, c := range cases {
		name := c.script
		if c.clientSide {
			name += "/client-side"
		}
		t.Run(name, func(t *testing.T) {
			cfg := custom.ScriptConfig{Name: c.script, Source: twin(t, c.script), Keys: c.keys, Args: c.args, Limit: l}
			var lim algorithms.Limiter
			var err error
			if c.clientSide {
				lim, err = custom.NewClientSide(srv.Client(), cfg)
			} else {
				lim, err = custom.NewScript(srv.Client(), cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rep, err := verify.Run(ctx, srv.Redis, lim, verifyConfig(l))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s in %s", rep.Verdict, time.Since(start))
			if rep.Verdict != c.want {
				t.Errorf("verdict %s, want %s (%s)", rep.Verdict, c.want, rep.Reason())
			}
			var race *measure.FamilyResult
			for i := range rep.Families {
				if rep.Families[i].Family == verify.RaceFamily {
					race = &rep.Families[i]
				}
			}
			switch {
			case c.race == "" && race != nil:
				t.Errorf("an atomic script got a race family: %+v", *race)
			case c.race != "" && race == nil:
				t.Fatalf("no race family")
			case c.race != "" && race.Verdict != c.race:
				t.Errorf("race family %s (max ratio %.2f), want %s", race.Verdict, race.MaxRatio, c.race)
			case c.raceRatio > 0 && race.MaxRatio != c.raceRatio:
				t.Errorf("race family max ratio %.2f, want %.2f", race.MaxRatio, c.raceRatio)
			}
			if ce := rep.CounterExample; ce != nil && ce.Family == verify.RaceFamily && len(ce.Interleaving) == 0 {
				t.Errorf("a race counter-example without its interleaving: %+v", ce)
			}
		})
	}
}

// TestRaceNaive: the seeds' naive sliding log is violated by the race
// family with the seeds' story in its interleaving (every client counts
// L-1 before any adds), and the same seed gives the same interleaving.
func TestRaceNaive(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	l := limit.Limit{Count: 20, Window: time.Minute}
	story := func() (*measure.CounterExample, string) {
		lim, err := custom.NewSlidingLogNaive(srv.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := verify.Run(ctx, srv.Redis, lim, verifyConfig(l))
		if err != nil {
			t.Fatal(err)
		}
		ce := rep.CounterExample
		if rep.Verdict != measure.Violated || ce == nil || ce.Family != verify.RaceFamily {
			t.Fatalf("verdict %s, counter-example %+v; want violated by the race family", rep.Verdict, ce)
		}
		// the interleaving without the request ids (fresh per limiter)
		var b strings.Builder
		for _, s := range ce.Interleaving {
			cmd, _, _ := strings.Cut(s.Command, " 17") // up to the first timestamp argument
			b.WriteString(cmd + " " + s.Reply + "\n")
		}
		return ce, b.String()
	}
	ce, first := story()
	if ce.Schedule == "" || ce.Accepted <= l.Count {
		t.Errorf("schedule %q, accepted %d: want a schedule and more than %d", ce.Schedule, ce.Accepted, l.Count)
	}
	// the seeds' story: the first L-1-prefilled burst has every client read L-1
	reads := 0
	for _, s := range ce.Interleaving {
		if strings.HasPrefix(s.Command, "ZCARD") && s.Reply == "19" {
			reads++
		}
	}
	if reads < 2 {
		t.Errorf("%d clients read 19 before adding; want at least 2:\n%s", reads, first)
	}
	if _, again := story(); again != first {
		t.Errorf("the same seed gave another interleaving:\n%s\nthen\n%s", first, again)
	}
}

// TestClientSideEvalOnTheClock: a client-side GCRA whose compare-and-swap
// is an EVAL with SETEX is judged as the same logic sent as plain
// commands: the EVAL'd script reads and sets TTLs on the decision's
// virtual clock, as the plain commands do, not on Redis's.
func TestClientSideEvalOnTheClock(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	l := limit.Limit{Count: 10, Window: time.Second}
	worst := map[string]float64{}
	verdict := map[string]measure.Verdict{}
	for _, name := range []string{"gcra-cas-plain.lua", "gcra-cas-eval.lua"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		lim, err := custom.NewClientSide(srv.Client(), custom.ScriptConfig{Name: name, Source: string(src),
			Args: []string{"{window_ms}", "{limit}"}, Limit: l})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rep, err := verify.Run(ctx, srv.Redis, lim, verifyConfig(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Families {
			worst[name] = max(worst[name], f.MaxRatio)
		}
		verdict[name] = rep.Verdict
		t.Logf("%s: %s, worst %.2fx, in %s", name, rep.Verdict, worst[name], time.Since(start))
	}
	if verdict["gcra-cas-eval.lua"] != verdict["gcra-cas-plain.lua"] {
		t.Errorf("verdict: EVAL'd CAS %s, plain %s", verdict["gcra-cas-eval.lua"], verdict["gcra-cas-plain.lua"])
	}
	if d := worst["gcra-cas-eval.lua"] - worst["gcra-cas-plain.lua"]; d > 0.05 || d < -0.05 {
		t.Errorf("worst ratio: EVAL'd CAS %.2f, plain %.2f: want within 0.05", worst["gcra-cas-eval.lua"], worst["gcra-cas-plain.lua"])
	}
}
