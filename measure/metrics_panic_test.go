package measure

import (
	"testing"
	"time"
)

// MaxInWindow never panics: a zero window or events out of order (a
// script that returns no time on the Redis clock) give a figure, not an
// index out of range.
func TestMaxInWindowNoPanic(t *testing.T) {
	unsorted := []Event{{At: 5 * time.Second, Cost: 1}, {At: 0, Cost: 1}, {At: 0, Cost: 1}}
	if got, _ := MaxInWindow(unsorted, time.Second); got < 1 {
		t.Errorf("unsorted: %d", got)
	}
	if got, _ := MaxInWindow([]Event{{At: 0, Cost: 2}, {At: time.Second, Cost: 3}}, 0); got != 3 {
		t.Errorf("zero window: %d, want 3 (one event's own cost)", got)
	}
}
