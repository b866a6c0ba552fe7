package limiter

import (
	"testing"

	"github.com/ratelab/ratelab/ratelabtest"
)

// TestLimiterKeepsItsLimit proves that limiter.lua never admits more than
// 10 requests in any window of 1 s, on $REDIS_URL or a throwaway
// redis-server (skipped, saying why, when there is neither).
func TestLimiterKeepsItsLimit(t *testing.T) {
	ratelabtest.Verify(t, ratelabtest.Target{
		Script: "limiter.lua",
		Args:   []string{"{now_us}", "{window_us}", "{limit}", "{request_id}"},
	}, "10/1s")
}
