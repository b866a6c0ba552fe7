package measure

import "time"

// WindowSeries returns the trailing-window series of events: the cost
// accepted within the half-open window (t-W, t] as a step function of t.
// Each point is a time at which that sum changes (an event enters at its
// time, leaves at its time + window) and the sum from that time on, until
// the next point; TMS is ms from origin (the events' own origin minus
// origin). events must be sorted by time (SortEvents); window must be > 0
// (otherwise nil is returned). When there would be more than maxPoints
// points (maxPoints > 0), time is cut into maxPoints/2 equal stretches and
// each keeps its largest point and its last, so the peak is never lost and
// the series still returns to where the stretch ends. The largest
// Accepted of the series equals MaxInWindow(events, window).
func WindowSeries(events []Event, window, origin time.Duration, maxPoints int) []WindowPoint {
	if window <= 0 || len(events) == 0 {
		return nil
	}
	var out []WindowPoint
	var sum int64
	in, outIdx := 0, 0 // next event to enter, next to leave
	for in < len(events) || outIdx < len(events) {
		// the next change: an arrival, or a departure at At + window
		t := events[outIdx].At + window
		if in < len(events) && events[in].At < t {
			t = events[in].At
		}
		for outIdx < len(events) && events[outIdx].At+window <= t {
			sum -= events[outIdx].Cost
			outIdx++
		}
		for in < len(events) && events[in].At <= t {
			sum += events[in].Cost
			in++
		}
		out = append(out, WindowPoint{TMS: float64((t - origin).Microseconds()) / 1000, Accepted: sum})
	}
	if maxPoints <= 0 || len(out) <= maxPoints {
		return out
	}
	return thinSeries(out, max(maxPoints/2, 1))
}

// thinSeries keeps, of each of bins equal stretches of time, the point
// with the largest value and the last point, in time order.
func thinSeries(pts []WindowPoint, bins int) []WindowPoint {
	lo, hi := pts[0].TMS, pts[len(pts)-1].TMS
	width := (hi - lo) / float64(bins)
	if width <= 0 {
		return pts[len(pts)-1:]
	}
	bin := func(i int) int { return min(int((pts[i].TMS-lo)/width), bins-1) }
	var out []WindowPoint
	for start := 0; start < len(pts); {
		b, peak, end := bin(start), start, start
		for end < len(pts) && bin(end) == b {
			if pts[end].Accepted > pts[peak].Accepted {
				peak = end
			}
			end++
		}
		out = append(out, pts[peak])
		if last := end - 1; last != peak {
			out = append(out, pts[last])
		}
		start = end
	}
	return out
}
