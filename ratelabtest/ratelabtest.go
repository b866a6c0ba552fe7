// Package ratelabtest verifies a Redis rate limiter from a Go test:
//
//	func TestLimiter(t *testing.T) {
//		ratelabtest.Verify(t, ratelabtest.Target{
//			Script: "limiter.lua",
//			Args:   []string{"{now_us}", "{window_us}", "{limit}", "{request_id}"},
//		}, "10/1s")
//	}
//
// Verify proves or refutes "never more than L in any window W" as
// `ratelab verify` does, on a real Redis: the URL of RATELAB_REDIS or
// REDIS_URL when set (a CI service), else a throwaway redis-server from
// PATH, else the test is skipped with the reason. A limiter that breaks
// the limit fails the test with the counter-example table in its log.
//
// Importing it compiles no Docker client, testcontainers or OpenTelemetry
// (its tests check `go list -deps`).
package ratelabtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/evict"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/harness/verifyprep"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/targets"
)

// The environment variables Redis reads, in order: RATELAB_REDIS, then
// REDIS_URL (the name CI services and hosting platforms use).
var RedisEnv = []string{"RATELAB_REDIS", "REDIS_URL"}

// StartTimeout bounds how long Redis waits for the redis-server it starts,
// and for the server of a URL to answer.
const StartTimeout = 10 * time.Second

// CallTimeout bounds each decision call of Verify: generous, since test
// machines are often loaded (a call past it is an error that fails the
// test, never a verdict).
const CallTimeout = 5 * time.Second

// Redis returns a Redis for the test, closed when the test ends
// (t.Cleanup):
//   - the redis:// or rediss:// URL of the first of RedisEnv that is set:
//     the test fails (t.Fatal) when it cannot be reached, since a CI that
//     names a Redis expects it used; ratelab touches only its own keys there
//     and removes them;
//   - else a throwaway redis-server from PATH on a free loopback port;
//   - else the test is skipped (t.Skip), saying how to get a Redis.
func Redis(t testing.TB) *server.Redis {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	for _, name := range RedisEnv {
		url := strings.TrimSpace(os.Getenv(name))
		if url == "" {
			continue
		}
		if !server.IsURL(url) {
			t.Fatalf("ratelabtest: $%s=%q is not a redis:// or rediss:// URL", name, redact.URL(url))
			return nil
		}
		rd, err := server.OpenURL(ctx, url, server.Options{Timeout: StartTimeout, BeforeWrite: evict.CheckOpen})
		if err != nil {
			t.Fatalf("ratelabtest: the Redis of $%s: %v", name, err)
			return nil
		}
		t.Cleanup(func() { _ = rd.Close() }) // a client's close: nothing left on the server
		return rd
	}
	rd, err := localredis.Start(ctx, StartTimeout, StartTimeout)
	if errors.Is(err, localredis.ErrNoServer) {
		t.Skipf("ratelabtest: no Redis: neither $%s is set, and %v", strings.Join(RedisEnv, " nor $"), err)
		return nil
	}
	if err != nil {
		t.Fatalf("ratelabtest: start redis-server: %v", err)
		return nil
	}
	t.Cleanup(func() {
		if err := rd.Close(); err != nil {
			t.Logf("ratelabtest: stopping redis-server: %v", err)
		}
	})
	return rd
}

// Target is the limiter a test verifies: exactly one of Script, Algorithm
// or Config. The fields are those of a target file (docs/config.md).
type Target struct {
	// Script is the path of a Lua script, called as EVAL with KEYS from
	// Keys (default one key, "{key}") and ARGV from Args: templates such
	// as "{now_us}", "{window_ms}", "{limit}", "{request_id}". Allowed is
	// the reply predicate ("reply == 1" when empty; e.g. "reply != nil",
	// "reply[1] == 1").
	Script     string
	Keys, Args []string
	Allowed    string
	// Algorithm is a built-in algorithm's name ("sliding-log", ...).
	Algorithm string
	// Config is the path of a target file (ratelab.yaml) holding one
	// target; its limits are used when Verify is given none.
	Config string
	// TrustScript runs the script with the connection's full rights on a
	// Redis of RedisEnv; by default it runs as a temporary ACL user that
	// may touch only the verification's keys (as `ratelab verify` does).
	TrustScript bool
}

// Verify verifies target on Redis(t) against limits, each "L/W" such as
// "10/1s" or "1000/1d" (all at once when several), and returns the report.
// When the limit does not hold (violated) the test fails (t.Error) with
// the report and its counter-example in the log; a verification that
// cannot be made (a script that does not load, Redis gone, calls that
// fail) fails it with t.Fatal. Verify takes several seconds only for a
// target that reads the server's clock (TIME), which runs in real time.
func Verify(t testing.TB, target Target, limits ...string) *measure.VerifyReport {
	t.Helper()
	return VerifyOn(t, Redis(t), target, limits...)
}

// VerifyOn is Verify on rd, for tests that share one Redis.
func VerifyOn(t testing.TB, rd *server.Redis, target Target, limits ...string) *measure.VerifyReport {
	t.Helper()
	ls, err := limit.ParseList(limits)
	if err != nil {
		t.Fatalf("ratelabtest: limits %q: %v", limits, err)
		return nil
	}
	g := targets.Given{Algorithm: target.Algorithm, Keys: target.Keys, Args: target.Args, Allowed: target.Allowed}
	if target.Script != "" {
		g.Scripts = []string{target.Script}
	}
	if target.Config != "" {
		g.Files = []string{target.Config}
	}
	specs, err := targets.Load(g)
	if err != nil {
		t.Fatalf("ratelabtest: target: %v", err)
		return nil
	}
	return verifySpec(t, rd, specs[0], target.TrustScript, ls)
}

// Request is one request a Func decides (custom.Request): Key, Cost, Now.
type Request = custom.Request

// Func is a rate limiter as a Go function (custom.Func): it decides req
// on rdb, a client of ratelab's endpoint on the virtual clock, and says
// whether it is allowed.
type Func = custom.Func

// VerifyFunc verifies a limiter written in Go as Verify verifies a
// script: fn runs once per request, on a go-redis client of ratelab's
// Redis endpoint (package custom/endpoint), whose TIME and key expiry
// read req.Now; so a library that reads Redis TIME (go-redis/redis_rate)
// is verified unchanged, in virtual time. Each simulated client has a
// client of its own; one call at a time per client. Every key fn writes
// is deleted when the verification ends.
//
//	ratelabtest.VerifyFunc(t, func(ctx context.Context, rdb redis.UniversalClient, req ratelabtest.Request) (bool, error) {
//		res, err := redis_rate.NewLimiter(rdb).AllowN(ctx, req.Key, redis_rate.PerMinute(60), int(req.Cost))
//		if err != nil {
//			return false, err
//		}
//		return res.Allowed > 0, nil
//	}, "60/1m")
func VerifyFunc(t testing.TB, fn Func, limits ...string) *measure.VerifyReport {
	t.Helper()
	return VerifyFuncOn(t, Redis(t), FuncTarget{Fn: fn}, limits...)
}

// FuncTarget is a Go function target and what it takes.
type FuncTarget struct {
	// Fn is the limiter. Required.
	Fn Func
	// Name labels the report ("func" when empty).
	Name string
	// UnitCost: Fn decides one unit per request (it ignores
	// Request.Cost), so every request is sent with cost 1.
	UnitCost bool
}

// VerifyFuncOn is VerifyFunc of target on rd (one node), for tests that
// share one Redis or whose function ignores the cost.
func VerifyFuncOn(t testing.TB, rd *server.Redis, target FuncTarget, limits ...string) *measure.VerifyReport {
	t.Helper()
	ls, err := limit.ParseList(limits)
	if err != nil {
		t.Fatalf("ratelabtest: limits %q: %v", limits, err)
		return nil
	}
	if target.Fn == nil {
		t.Fatalf("ratelabtest: VerifyFunc: the function is nil")
		return nil
	}
	if target.Name == "" {
		target.Name = "func"
	}
	return verifySpec(t, rd, targets.Spec{Name: target.Name, Func: target.Fn, UnitCost: target.UnitCost}, false, ls)
}

// verifySpec is the verification of Verify and VerifyFunc.
func verifySpec(t testing.TB, rd *server.Redis, spec targets.Spec, trust bool, ls []limit.Limit) *measure.VerifyReport {
	t.Helper()
	// progress to the test log: shown with -v or on failure, the real-time
	// estimate of a target that reads its own clock included
	cfg := verify.Config{Progress: logWriter{t}, Timeout: CallTimeout, MaxOutage: 5 * CallTimeout}
	ctx := context.Background()
	// the preparation `ratelab verify` makes: the limits checked, the
	// script compiled before its first call, tried on a throwaway server
	// and guarded on a Redis ratelab did not start (its temporary ACL user
	// also expires with the run), the limiter built
	p, err := verifyprep.Prepare(ctx, rd, cfg, spec, verifyprep.Limits{Given: ls, Gave: len(ls) > 0},
		verifyprep.Guard{Trust: trust, Progress: logWriter{t}})
	if refused := (*guard.RefusedError)(nil); errors.As(err, &refused) {
		t.Fatalf("ratelabtest: script %s: %v", refused.Name, errors.Unwrap(refused.Err))
		return nil
	}
	if name, _ := field.Name(err); name == "limit" {
		t.Fatalf("ratelabtest: %v (give limits such as \"10/1s\")", err)
		return nil
	}
	if err != nil {
		t.Fatalf("ratelabtest: %v", err)
		return nil
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("ratelabtest: %v", err)
		}
	}()
	rep, err := verify.Run(ctx, p.Redis, p.Limiter, p.Config)
	if err != nil {
		t.Fatalf("ratelabtest: verify %s: %v", p.Limiter.Name(), err)
		return nil
	}
	switch rep.Verdict {
	case measure.Holds:
	case measure.Inconclusive:
		t.Fatalf("ratelabtest: verify %s: inconclusive: %s\n%s", rep.Target, rep.Reason(), table(rep))
	default:
		t.Errorf("ratelabtest: %s: %s (%s)\n%s", rep.Target, rep.Verdict, rep.LimitDesc, table(rep))
	}
	return rep
}

// logWriter writes lines to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// table is rep as `ratelab verify` prints it.
func table(rep *measure.VerifyReport) string {
	var b strings.Builder
	if err := reports.WriteVerify(&b, reports.Table, rep); err != nil {
		return fmt.Sprintf("(the report could not be rendered: %v)", err)
	}
	return b.String()
}
