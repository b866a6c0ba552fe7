package replay_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/replay"
	"github.com/ratelab/ratelab/limit"
)

// Replay a few requests of two clients against two algorithms, one limit
// per client: 3 requests per 10 s. Client "a" sends 3 just before a window
// boundary and 3 just after it.
func ExampleRun() {
	ctx := context.Background()
	rd, err := localredis.Start(ctx, localredis.StartTimeout, 5*time.Second) // a throwaway redis-server from PATH
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Close()

	traffic := strings.NewReader(`timestamp,key
2024-05-01T12:00:09.7Z,a
2024-05-01T12:00:09.8Z,a
2024-05-01T12:00:09.9Z,a
2024-05-01T12:00:10.1Z,a
2024-05-01T12:00:10.2Z,a
2024-05-01T12:00:10.3Z,a
2024-05-01T12:00:12Z,b
`)
	res, err := replay.Run(ctx, rd, traffic, replay.Config{
		Algorithms: []string{"fixed-window", "sliding-log"},
		Limit:      limit.Limit{Count: 3, Window: 10 * time.Second},
	}, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range res.Results {
		p := row.PerKey
		fmt.Printf("%s: accepted %d of %d, %d of %d keys over the limit, worst %s at %.1fx, starved %d\n",
			row.Algorithm, row.Accepted, row.Offered, p.KeysOver, p.Keys, p.WorstKey, p.WorstRatio, p.Starved)
	}
	// Output:
	// fixed-window: accepted 7 of 7, 1 of 2 keys over the limit, worst a at 2.0x, starved 0
	// sliding-log: accepted 4 of 7, 0 of 2 keys over the limit, worst a at 1.0x, starved 0
}
