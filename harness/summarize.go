package harness

import (
	"sort"
	"time"

	"github.com/ratelab/ratelab/measure"
)

// summarize computes a Row from a job's result and its outcomes (outs, in
// the arrivals' order).
func summarize(jr JobResult, outs []Outcome, clock ClockMode) measure.Row {
	j, h, anchor := jr.Job, jr.Latency, jr.Anchor
	l := j.Limit
	row := measure.Row{
		Algorithm: j.Limiter.Name(), Scenario: j.Scenario, LimitDesc: j.Limiter.Describe(),
		Limit: l.Count, WindowMS: l.Window.Milliseconds(), Clock: string(clock),
	}
	if clock == "" {
		row.Clock = string(VirtualClock)
	}
	offered := make([]measure.Event, 0, len(outs))
	var accepted []measure.Event
	type step struct {
		at      time.Duration
		cost    int64
		allowed bool
	}
	steps := make([]step, 0, len(outs))
	for _, o := range outs {
		cost := o.Arrival.Cost
		at := o.Decision.DecidedAt.Sub(anchor)
		row.Requests++
		row.Offered += cost
		offered = append(offered, measure.Event{At: at, Cost: cost})
		if o.Err != nil {
			row.Errors++
			if o.Decision.Allowed {
				row.FailedOpen += cost
			} else {
				row.FailedClosed += cost
				continue
			}
		}
		steps = append(steps, step{at, cost, o.Decision.Allowed})
		if o.Decision.Allowed {
			row.AcceptedRequests++
			row.Accepted += cost
			accepted = append(accepted, measure.Event{At: at, Cost: cost})
		}
	}
	measure.SortEvents(accepted)
	measure.SortEvents(offered)
	var end time.Duration
	row.MaxInWindow, end = measure.MaxInWindow(accepted, l.Window)
	row.MaxWindowEndMS = float64(end.Microseconds()) / 1000
	row.Ratio = float64(row.MaxInWindow) / float64(l.Count)
	if row.MaxInWindow > 0 {
		w := measure.SplitWindow(accepted, l.Window, end)
		row.Worst = &w
	}
	row.Ideal = measure.Ideal(offered, l.Count, l.Window)
	row.DurationMS = jr.Duration.Milliseconds()
	row.Fidelity = 1
	if row.Ideal > 0 {
		row.Fidelity = float64(row.Accepted) / float64(row.Ideal)
	}
	if h != nil && h.TotalCount() > 0 {
		row.P50US = h.ValueAtQuantile(50)
		row.P99US = h.ValueAtQuantile(99)
		row.P999US = h.ValueAtQuantile(99.9)
		row.MaxUS = h.Max()
	}
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].at < steps[b].at })
	var acc, den int64
	tl := make([]measure.Point, 0, len(steps))
	for i, s := range steps {
		if s.allowed {
			acc += s.cost
		} else {
			den += s.cost
		}
		if i+1 < len(steps) && steps[i+1].at == s.at {
			continue
		}
		tl = append(tl, measure.Point{TMS: float64(s.at.Microseconds()) / 1000, Accepted: acc, Denied: den})
	}
	row.Timeline = thin(tl, 400)
	row.Trailing = measure.WindowSeries(accepted, l.Window, 0, 400)
	return row
}

// thin keeps at most n points of a cumulative series, always the last.
func thin(p []measure.Point, n int) []measure.Point {
	if len(p) <= n {
		return p
	}
	out := make([]measure.Point, 0, n+1)
	step := float64(len(p)) / float64(n)
	for i := 0.0; int(i) < len(p); i += step {
		out = append(out, p[int(i)])
	}
	if out[len(out)-1] != p[len(p)-1] {
		out = append(out, p[len(p)-1])
	}
	return out
}
