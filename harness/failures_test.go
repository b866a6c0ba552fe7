package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/callguard"
	"github.com/ratelab/ratelab/harness/server"
)

// A command stopped by a Redis that does not answer asks it nothing more
// (no memory of its keys, no CPU figure): each such call would wait out
// its own bound, which held a stalled replay's exit for 30 s. Other
// causes leave the server answering, and its figures are read.
func TestUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"an outage", fmt.Errorf("%w for 2s (last error: EOF)", callguard.ErrOutage), true},
		{"a stall", &callguard.StallError{Bound: 3 * time.Second, Err: context.DeadlineExceeded}, true},
		{"a stall of one algorithm", fmt.Errorf("gcra: %w", &callguard.StallError{Bound: time.Second}), true},
		{"a restart", &server.EnvError{Addr: "127.0.0.1:6379", Restarted: true}, false},
		{"failed calls", &CallsFailedError{Failed: 1, Calls: 10, First: errors.New("ERR x")}, false},
		{"Ctrl-C", context.Canceled, false},
		{"none", nil, false},
	} {
		if got := Unanswered(tc.err); got != tc.want {
			t.Errorf("%s: Unanswered(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
