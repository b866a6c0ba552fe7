package verify_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
)

// Verify two built-in algorithms against "at most 20 in any hour": the
// sliding log holds; the fixed window accepts twice the limit across a
// window boundary. An hour-long window runs in virtual time (injected
// timestamps, no sleeping, key TTLs emulated on the virtual clock) in well
// under a second; Config.RealTime would add the wall-clock families.
func ExampleRun() {
	ctx := context.Background()
	rd, err := localredis.Start(ctx, localredis.StartTimeout, 5*time.Second) // a throwaway redis-server from PATH; your own: server.OpenURL
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Close()

	cfg := verify.Config{Limits: []limit.Limit{{Count: 20, Window: time.Hour}}, Seed: 1}
	for _, name := range []string{"sliding-log", "fixed-window"} {
		lim, err := algorithms.New(name, rd.Client, cfg.Primary())
		if err != nil {
			fmt.Println(err)
			return
		}
		rep, err := verify.Run(ctx, rd, lim, cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s\n", name, rep.Verdict)
		for _, f := range rep.Families[:1] {
			fmt.Printf("  %s: at most %.2fx the limit in one window\n", f.Family, f.MaxRatio)
		}
		if ce := rep.CounterExample; ce != nil {
			fmt.Printf("  counter-example: %d accepted within %dµs\n", ce.Accepted, ce.EndUS-ce.StartUS)
		}
	}
	// Output:
	// sliding-log: holds
	//   boundary: at most 1.00x the limit in one window
	// fixed-window: violated
	//   boundary: at most 2.00x the limit in one window
	//   counter-example: 21 accepted within 20µs
}

// Verify your own Lua script: KEYS[1] is the key, and each ARGV template
// is filled in per call ({now_us} injects the time, so the script runs in
// virtual time; {request_id} is unique per request). The reply 1 means
// allowed (NewScriptLimiter's allowedWhen). This one is a correct sliding
// log; it takes no {cost}, so the weighted family is skipped.
func ExampleRun_script() {
	const src = `
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1`
	ctx := context.Background()
	rd, err := localredis.Start(ctx, localredis.StartTimeout, 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Close()

	cfg := verify.Config{Limits: []limit.Limit{{Count: 20, Window: time.Hour}}, Seed: 1}
	args := []string{"{now_us}", "{window_us}", "{limit}", "{request_id}"}
	lim, err := custom.NewScriptLimiter(rd.Client, "limiter.lua", src, args, 1, cfg.Primary())
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := verify.Run(ctx, rd, lim, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %s\n", rep.LimitDesc, rep.Verdict)
	for _, f := range rep.Families {
		if f.Family == "weighted" {
			fmt.Printf("%s: %s (%s)\n", f.Family, f.Verdict, f.Note)
		}
	}
	// Output:
	// 20 per 1h, ARGV "{now_us}" "{window_us}" "{limit}" "{request_id}": holds
	// weighted: skipped (the target takes no cost (no {cost} argument))
}
