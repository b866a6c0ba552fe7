package ratelabtest_test

import (
	"testing"

	"github.com/ratelab/ratelab/ratelabtest"
)

// The package's uses, as a user's tests write them (they run here: go test
// passes them, on $REDIS_URL or a throwaway redis-server). A module of its
// own doing the same: docs/examples/gotest.

// A limiter script: a sliding-window log called with the time in µs, the
// window, the limit and a unique member. The test passes when no window of
// 1 s ever admits more than 10; otherwise it fails with the
// counter-example in the test log.
func TestUsageScript(t *testing.T) {
	ratelabtest.Verify(t, ratelabtest.Target{
		Script: "testdata/sliding-log.lua",
		Args:   []string{"{now_us}", "{window_us}", "{limit}", "{request_id}"},
	}, "10/1s")
}

// A target file (ratelab.yaml) shared with `ratelab verify` in CI: its own
// limits when none are given.
func TestUsageTargetFile(t *testing.T) {
	ratelabtest.Verify(t, ratelabtest.Target{Config: "testdata/ratelab.yaml"})
}

// Several checks on one Redis: Redis starts it (or takes $REDIS_URL) once.
func TestUsageVerifyOn(t *testing.T) {
	rd := ratelabtest.Redis(t)
	for _, l := range []string{"10/1s", "50/1d"} {
		ratelabtest.VerifyOn(t, rd, ratelabtest.Target{Algorithm: "sliding-log"}, l)
	}
}
