package verify_test

import (
	"fmt"
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

// Time reaches a limiter three ways, and all three run on
// the virtual clock. Scripts that read no clock at all (their clock is key
// expiry) run in virtual time: a fixed window from the first hit is
// refuted at ~1.9x at W = 1 min and 24 h without waiting a window; scripts
// that read their TTLs (PTTL == -1), set absolute expiries from their clock
// argument (SET PXAT, PEXPIREAT) or keep TTLs (SET KEEPTTL, GETEX, PERSIST)
// behave as on a Redis at the virtual time. Each broken script has a
// corrected twin that holds.
func TestVerifyExpiryClock(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	limWin := []string{"{limit}", "{window_ms}"}
	absolute := []string{"{now_ms}", "{window_ms}", "{limit}", "{request_id}"}
	pttlReply := "reply[1] == 1"
	cases := []struct {
		file    string
		args    []string
		allowed string
		windows []time.Duration
		verdict measure.Verdict
		ratio   float64 // the least max-in-W / limit of a violation
	}{
		{"fw-first-hit.lua", limWin, "", []time.Duration{time.Minute, 24 * time.Hour}, measure.Violated, 1.9},
		{"fw-first-hit-expire.lua", []string{"{limit}", "{window_s}"}, "", []time.Duration{time.Hour}, measure.Violated, 1.9},
		{"fw-push-out.lua", limWin, "", []time.Duration{time.Minute, 24 * time.Hour}, measure.Holds, 0},
		{"ttl-when-none.lua", limWin, pttlReply, []time.Duration{time.Hour}, measure.Violated, 1.9},
		{"ttl-when-none-half.lua", limWin, pttlReply, []time.Duration{time.Hour}, measure.Holds, 0},
		{"epoch-pxat.lua", absolute, "", []time.Duration{time.Hour}, measure.Violated, 1.9},
		{"log-pexpireat.lua", absolute, "", []time.Duration{time.Hour}, measure.Holds, 0},
		{"keepttl-first-hit.lua", limWin, "", []time.Duration{time.Hour}, measure.Violated, 1.9},
		{"keepttl-persist.lua", limWin, "", []time.Duration{time.Hour}, measure.Holds, 0},
	}
	for _, c := range cases {
		for _, w := range c.windows {
			t.Run(fmt.Sprintf("%s/%s", c.file, limit.FormatWindow(w)), func(t *testing.T) {
				src, err := os.ReadFile(filepath.Join("testdata", c.file))
				if err != nil {
					t.Fatal(err)
				}
				l := limit.Limit{Count: 10, Window: w}
				sc := custom.ScriptConfig{Name: c.file, Source: string(src), Args: c.args, Limit: l}
				if c.allowed != "" {
					if sc.Allowed, err = custom.ParseReplyPredicate(c.allowed); err != nil {
						t.Fatal(err)
					}
				}
				lim, err := custom.NewScript(srv.Client(), sc)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := verify.Run(ctx, srv.Redis, lim, verifyConfig(l))
				if err != nil {
					t.Fatal(err)
				}
				if rep.Errors != 0 || rep.Verdict != c.verdict {
					t.Fatalf("verdict %s with %d errors %v, want %s; counter-example %+v", rep.Verdict, rep.Errors, rep.ErrorSamples, c.verdict, rep.CounterExample)
				}
				worst := 0.0
				for _, f := range rep.Families {
					if f.Mode != "" && f.Mode != "virtual" {
						t.Errorf("family %s ran %s; want virtual time only", f.Family, f.Mode)
					}
					worst = max(worst, f.MaxRatio)
				}
				if c.verdict == measure.Violated && worst < c.ratio {
					t.Errorf("worst max-in-W / limit %.2f, want >= %.2f", worst, c.ratio)
				}
			})
		}
	}
}

// --real-time keeps a script that reads no clock on the wall clock.
func TestVerifyExpiryClockRealTime(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "fw-first-hit.lua"))
	if err != nil {
		t.Fatal(err)
	}
	l := limit.Limit{Count: 5, Window: time.Hour}
	lim, err := custom.NewScriptLimiter(srv.Client(), "fw-first-hit.lua", string(src), []string{"{limit}", "{window_ms}"}, 1, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg := verifyConfig(l)
	cfg.RealTime = true
	rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Families {
		if f.Mode == "virtual" {
			t.Errorf("family %s ran in virtual time under RealTime", f.Family)
		}
	}
}
