package server

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// ServerClockOffset estimates the Redis server's clock minus the local clock
// from samples TIME round trips: the sample with the shortest round trip,
// with the server's reading taken to be at its midpoint. Error: about half
// that round trip.
func ServerClockOffset(ctx context.Context, c redis.UniversalClient, samples int) (time.Duration, error) {
	best := time.Duration(-1)
	var offset time.Duration
	for i := 0; i < max(samples, 1); i++ {
		sent := time.Now()
		st, err := c.Time(ctx).Result()
		recv := time.Now()
		if err != nil {
			return 0, err
		}
		rtt := recv.Sub(sent)
		if best < 0 || rtt < best {
			best = rtt
			mid := sent.Add(rtt / 2)
			offset = st.Sub(mid)
		}
	}
	return offset, nil
}
