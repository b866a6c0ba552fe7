package reports

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/measure"
)

// WhyBroke tells the three shapes apart from the figures of the worst
// window, as the boundary-burst scenario makes them (50 per 10s, 50
// accepted 1s before the boundary, more 1s after), and says nothing of a
// row within its limit.
func TestWhyBroke(t *testing.T) {
	const limit, window = 50, 10 * time.Second
	burst := func(before, after int) measure.Row {
		var ev []measure.Event
		for range before {
			ev = append(ev, measure.Event{At: -time.Second, Cost: 1})
		}
		for range after {
			ev = append(ev, measure.Event{At: time.Second, Cost: 1})
		}
		maxIn, end := measure.MaxInWindow(ev, window)
		w := measure.SplitWindow(ev, window, end)
		return measure.Row{Limit: limit, WindowMS: window.Milliseconds(), MaxInWindow: maxIn, Ratio: float64(maxIn) / limit, Worst: &w}
	}
	var inOne measure.Row
	{ // 60 after the boundary, none before: no boundary crossed
		ev := make([]measure.Event, 60)
		for i := range ev {
			ev[i] = measure.Event{At: time.Second + time.Duration(i)*time.Millisecond, Cost: 1}
		}
		maxIn, end := measure.MaxInWindow(ev, window)
		w := measure.SplitWindow(ev, window, end)
		inOne = measure.Row{Limit: limit, WindowMS: window.Milliseconds(), MaxInWindow: maxIn, Ratio: float64(maxIn) / limit, Worst: &w}
	}
	for _, c := range []struct {
		name string
		row  measure.Row
		want string
	}{
		{"a count that restarts (fixed window)", burst(50, 50), "counter reset at the boundary at +0s: 50 before + 50 after (the 50 after alone reach L = 50)"},
		{"a bucket that refilled in 2s (token bucket, GCRA)", burst(50, 10), "refilled while it waited: 50 before the boundary at +0s + 10 after, what 50 per 10s refills in the 2s between them"},
		{"the previous window weighed at 0.9 (sliding counter)", burst(50, 5), "the previous window weighed in at 0.90: 50 before the boundary at +0s counted as 45 1s later, leaving room for 5 after"},
		{"none of the three", burst(50, 30), "50 accepted before the boundary at +0s + 30 after, within 2s"},
		{"no boundary crossed", inOne, "60 accepted after the boundary at +0s, within 59ms of one aligned window: more than L with no boundary crossed"},
		{"within the limit", burst(50, 0), ""},
	} {
		if got := WhyBroke(c.row); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
