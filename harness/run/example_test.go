package run_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/run"
)

// Seed 001's boundary burst in virtual time (injected timestamps, no
// sleeping): 50 requests just before an aligned window boundary and 50 just
// after, within W/5, against the scenario's limit of 50 per 10 s. The fixed
// window accepts both bursts — twice the limit within one window — where
// the sliding log accepts one. The run's keys are removed at the end.
func ExampleRun() {
	ctx := context.Background()
	rd, err := localredis.Start(ctx, localredis.StartTimeout, 5*time.Second) // a throwaway redis-server from PATH; your own: server.OpenURL
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Close()

	cfg := run.Config{Algorithms: []string{"fixed-window", "sliding-log"}, Scenarios: []string{"boundary-burst"}}
	res, err := run.Run(ctx, rd, cfg, nil, nil) // no decision log, no progress
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Results {
		fmt.Printf("%s: limit %s, offered %d, accepted %d, max in one window %d (%.2fx)\n",
			r.Algorithm, r.LimitDesc, r.Offered, r.Accepted, r.MaxInWindow, r.Ratio)
	}
	// Output:
	// fixed-window: limit 50 per 10s, offered 100, accepted 100, max in one window 100 (2.00x)
	// sliding-log: limit 50 per 10s, offered 100, accepted 50, max in one window 50 (1.00x)
}
