package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

// A sliding log of 3 requests per second, decided on an injected clock: the
// times are passed into the script, so the example never sleeps and always
// decides the same way. The fourth request inside one second is denied, with
// the time until the oldest accepted one leaves the window; one second after
// the first, it has left and a request fits again. A cost above the limit
// can never fit and is refused before any Redis call.
func ExampleLimiter_Allow() {
	ctx := context.Background()
	rdb := srv.Client() // the package's throwaway redis-server (TestMain); any redis.Scripter will do
	lim, err := algorithms.New("sliding-log", rdb, limit.Limit{Count: 3, Window: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	key := "example:user-42"
	rdb.Del(ctx, key) // a fresh key, should the example run twice (-count 2)

	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, ms := range []int{0, 100, 200, 300, 1000} {
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		d, err := lim.Allow(ctx, key, 1, algorithms.At(at))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("t0+%-6s allowed %-5v remaining %d retry after %s (decided at t0+%s)\n",
			at.Sub(t0), d.Allowed, d.Remaining, d.RetryAfter, d.DecidedAt.Sub(t0))
	}

	_, err = lim.Allow(ctx, key, 4, algorithms.At(t0))
	fmt.Println(errors.Is(err, algorithms.ErrCostExceedsLimit), err)
	// Output:
	// t0+0s     allowed true  remaining 2 retry after 0s (decided at t0+0s)
	// t0+100ms  allowed true  remaining 1 retry after 0s (decided at t0+100ms)
	// t0+200ms  allowed true  remaining 0 retry after 0s (decided at t0+200ms)
	// t0+300ms  allowed false remaining 0 retry after 700ms (decided at t0+300ms)
	// t0+1s     allowed true  remaining 0 retry after 0s (decided at t0+1s)
	// true sliding-log: cost 4 with limit 3: cost exceeds limit
}
