package verify_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// largeEnv runs the largest limits of TestVerifyNoFalseAlarm (L = 100,000:
// about ten times an L = 10,000 case each) when set to 1.
const largeEnv = "RATELAB_VERIFY_LARGE"

// A correct limiter holds at every limit and window, with no error: the
// judge reads decision times as the limiter does (whole µs, the trailing
// window (t-W, t]) and its weighted calls never exceed what Lua can unpack.
// Limits are log-spaced from 1 to 10,000 (100,000 with RATELAB_VERIFY_LARGE=1),
// windows from 1 ms to 24 h; L = 10,000 runs at 1s, 10s and 24h (each about
// 1.4 million decisions). Windows of 1-2 ms run at L = 100 too: the key
// expiry emulation keeps every real expiry far from Redis's clock, so a
// descheduled script cannot make Redis delete a log at once (which would
// be a false alarm now and then).
func TestVerifyNoFalseAlarm(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	type target struct {
		name string
		file string // a testdata script with nowWinLimIDC; "" for the built-in
	}
	builtin := target{name: "sliding-log"}
	script := target{name: "chunked-sliding-log.lua", file: "chunked-sliding-log.lua"}
	cases := []struct {
		target target
		count  int64
		window time.Duration
		large  bool
	}{
		{builtin, 1, time.Millisecond, false},
		{builtin, 100, time.Millisecond, false},
		{builtin, 100, 2 * time.Millisecond, false},
		{builtin, 1, 24 * time.Hour, false},
		{builtin, 10, 10 * time.Millisecond, false},
		{builtin, 10, time.Hour, false},
		{builtin, 100, 10 * time.Millisecond, false},
		{builtin, 100, time.Minute, false},
		{builtin, 1000, time.Second, false},
		{builtin, 1000, 24 * time.Hour, false},
		{builtin, 10_000, time.Second, false},
		{builtin, 10_000, 10 * time.Second, false},
		{builtin, 10_000, 24 * time.Hour, false},
		{builtin, 100_000, time.Second, true},
		{builtin, 100_000, 24 * time.Hour, true},
		{script, 1, time.Millisecond, false},
		{script, 1000, 10 * time.Second, false},
		{script, 10_000, time.Second, true},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/%d/%s", c.target.name, c.count, limit.FormatWindow(c.window)), func(t *testing.T) {
			if c.large && os.Getenv(largeEnv) != "1" {
				t.Skipf("set %s=1 to run limits of 100,000", largeEnv)
			}
			l := limit.Limit{Count: c.count, Window: c.window}
			var lim algorithms.Limiter
			var err error
			if c.target.file == "" {
				lim, err = algorithms.New(c.target.name, srv.Client(), l)
			} else {
				src, rerr := os.ReadFile(filepath.Join("testdata", c.target.file))
				if rerr != nil {
					t.Fatal(rerr)
				}
				lim, err = custom.NewScriptLimiter(srv.Client(), c.target.file, string(src), nowWinLimIDC, 1, l)
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := verifyConfig(l)
			cfg.RunID = fmt.Sprintf("noalarm%d", i)
			rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != measure.Holds || rep.Errors != 0 {
				t.Fatalf("verdict %s with %d errors %v; want holds with none; counter-example %+v", rep.Verdict, rep.Errors, rep.ErrorSamples, rep.CounterExample)
			}
			if keys, _ := server.ScanKeys(ctx, srv.Client(), server.KeyPrefix+cfg.RunID+":"); len(keys) != 0 {
				t.Errorf("keys left behind: %v", keys[:min(len(keys), 5)])
			}
		})
	}
}

// A weighted log that unpacks a whole cost's members into one ZADD fails
// past Lua's stack limit; its twin, adding 1000 at a time, admits the whole
// limit in one call and keeps one member per unit.
func TestWeightedLogUnpackLimit(t *testing.T) {
	t.Parallel()
	l := limit.Limit{Count: 10_000, Window: time.Second}
	at := algorithms.At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		file string
		err  string // "" when the call of cost L must be allowed
	}{
		{"unpack-sliding-log.lua", "too many results to unpack"},
		{"chunked-sliding-log.lua", ""},
	} {
		src, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		lim, err := custom.NewScriptLimiter(srv.Client(), c.file, string(src), nowWinLimIDC, 1, l)
		if err != nil {
			t.Fatal(err)
		}
		key := server.KeyPrefix + "unpack-test:" + c.file
		d, err := lim.Allow(ctx, key, l.Count, at)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: cost %d: %v, %v; want an error containing %q", c.file, l.Count, d, err, c.err)
		case c.err == "" && (err != nil || !d.Allowed):
			t.Errorf("%s: cost %d: %+v, %v; want allowed", c.file, l.Count, d, err)
		case c.err == "":
			if n, _ := srv.Client().ZCard(ctx, key).Result(); n != l.Count {
				t.Errorf("%s: %d members for cost %d; want one per unit", c.file, n, l.Count)
			}
		}
		srv.Client().Del(ctx, key)
	}
	// the built-in sliding log, at the limit's largest cost
	sl, err := algorithms.New("sliding-log", srv.Client(), limit.Limit{Count: verify.MaxLimit, Window: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	key := server.KeyPrefix + "unpack-test:builtin"
	if d, err := sl.Allow(ctx, key, verify.MaxLimit, at); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Errorf("sliding-log cost %d: %+v, %v; want allowed with 0 remaining", verify.MaxLimit, d, err)
	}
	if n, _ := srv.Client().ZCard(ctx, key).Result(); n != verify.MaxLimit {
		t.Errorf("sliding-log: %d members for cost %d; want one per unit", n, verify.MaxLimit)
	}
	srv.Client().Del(ctx, key)
}

// Errors are never a verdict: a correct script that fails on some calls is
// inconclusive, with the count and the first error, even though every
// answered call holds; its twin without the failing path holds.
func TestVerifyErrorsAreNoVerdict(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	l := limit.Limit{Count: 20, Window: 500 * time.Millisecond}
	for _, c := range []struct {
		file string
		want measure.Verdict
	}{
		{"sometimes-errors.lua", measure.Inconclusive},
		{"sliding-log.lua", measure.Holds},
	} {
		src, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		lim, err := custom.NewScriptLimiter(srv.Client(), c.file, string(src), nowWinLimID, 1, l)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := verify.Run(ctx, srv.Redis, lim, verifyConfig(l))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if rep.Verdict != c.want {
			t.Errorf("%s: verdict %s with %d errors; want %s", c.file, rep.Verdict, rep.Errors, c.want)
		}
		if c.want != measure.Inconclusive {
			continue
		}
		reason := rep.Reason()
		if rep.Errors == 0 || !strings.Contains(reason, fmt.Sprintf("%d of %d calls failed", rep.Errors, rep.Decisions)) ||
			!strings.Contains(reason, "rare path: no such bucket") {
			t.Errorf("%s: %d errors, reason %q; want the count and the first error", c.file, rep.Errors, reason)
		}
		if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[len(rep.Notes)-1], reason) {
			t.Errorf("%s: notes %q do not say why", c.file, rep.Notes)
		}
	}
}

// A published-style script replying {"1", "9"} (tostring) holds under the
// predicate its author writes, reply[1] == 1, and under the default one.
func TestVerifyStringReply(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderRace(t)
	l := limit.Limit{Count: 20, Window: 500 * time.Millisecond}
	src, err := os.ReadFile(filepath.Join("testdata", "string-reply-sliding-log.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pred := range []string{"reply[1] == 1 && reply[2] >= 0 && reply[2] < limit", ""} {
		var allowed custom.ReplyPredicate
		if pred != "" {
			if allowed, err = custom.ParseReplyPredicate(pred); err != nil {
				t.Fatal(err)
			}
		}
		lim, err := custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "string-reply", Source: string(src),
			Args: nowWinLimID, Allowed: allowed, Limit: l})
		if err != nil {
			t.Fatal(err)
		}
		cfg := verifyConfig(l)
		cfg.MinFidelity = 0.9 // a predicate that never matches denies everything: starved, not holds
		rep, err := verify.Run(ctx, srv.Redis, lim, cfg)
		if err != nil {
			t.Fatalf("predicate %q: %v", pred, err)
		}
		if rep.Verdict != measure.Holds || rep.Errors != 0 {
			t.Errorf("predicate %q: verdict %s, %d errors %v; want holds", pred, rep.Verdict, rep.Errors, rep.ErrorSamples)
		}
	}
}
