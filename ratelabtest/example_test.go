package ratelabtest_test

import (
	"testing"

	"github.com/ratelab/ratelab/ratelabtest"
)

// A test of a limiter script: a sliding-window log called with the time in
// µs, the window, the limit and a unique member. It passes when no window
// of 1 s ever admits more than 10; otherwise it fails with the
// counter-example in the test log.
func ExampleVerify() {
	_ = func(t *testing.T) { // func TestLimiter(t *testing.T)
		ratelabtest.Verify(t, ratelabtest.Target{
			Script: "limiter.lua",
			Args:   []string{"{now_us}", "{window_us}", "{limit}", "{request_id}"},
		}, "10/1s")
	}
}

// Several limits at once, on a target file (ratelab.yaml) shared with
// `ratelab verify` in CI: its own limits when none are given.
func ExampleVerify_targetFile() {
	_ = func(t *testing.T) {
		ratelabtest.Verify(t, ratelabtest.Target{Config: "ratelab.yaml"})
	}
}

// Tests that share one Redis: Redis starts it (or takes $REDIS_URL) once.
func ExampleVerifyOn() {
	_ = func(t *testing.T) {
		rd := ratelabtest.Redis(t)
		for _, l := range []string{"10/1s", "1000/1h"} {
			ratelabtest.VerifyOn(t, rd, ratelabtest.Target{Algorithm: "sliding-log"}, l)
		}
	}
}
