package verify

import (
	"fmt"
	"time"
)

// RealTimeWarnAfter is how long the real-time trials of a verification
// must be expected to take before Run says so on Config.Progress, with the
// estimate, before it starts them: a target that reads its own clock (a
// script with no {now_*} argument) runs in real time, several windows
// long, where an injected clock takes well under a second.
const RealTimeWarnAfter = 5 * time.Second

// realTimeEstimate is the wall time p's real-time trials are expected to
// take. A target with keys runs them all at once against one anchor
// (harness.Runner.Execute): the runner's lead, the wait for a window
// boundary (half a window on average; none when the target takes an
// injected clock), then from the earliest first arrival to the latest
// last one. A key-less target (HTTP) runs a subset one after another, each
// after a window of silence. Reruns of trials that were too slow are not
// counted.
func (s *study) realTimeEstimate(p plan) time.Duration {
	const lead = 300 * time.Millisecond // harness.Runner's default Lead
	wait := s.limit.Window / 2
	if s.caps.InjectsTime {
		wait = 0
	}
	span := func(idx []int) time.Duration {
		first, last, seen := time.Duration(0), time.Duration(0), false
		for _, i := range idx {
			sh := p.shapes[i]
			if sh.calls == 0 {
				continue
			}
			if !seen || sh.first < first {
				first = sh.first
			}
			if !seen || sh.last > last {
				last = sh.last
			}
			seen = true
		}
		if !seen {
			return 0
		}
		return lead + wait + last - first
	}
	if s.caps.UsesKeys {
		return span(p.real)
	}
	var total time.Duration
	for _, i := range sequentialSubset(p.trials, p.real) {
		total += s.limit.Window + span([]int{i})
	}
	return total
}

// warnRealTime says on Config.Progress how long the real-time trials of p
// will take, and why they run in real time, when that is at least
// RealTimeWarnAfter.
func (s *study) warnRealTime(p plan) {
	d := s.realTimeEstimate(p)
	if s.cfg.Progress == nil || d < RealTimeWarnAfter {
		return
	}
	why := "--real-time runs the TTL and concurrency families again on the wall clock"
	if !s.caps.InjectsTime {
		why = "the target reads its own clock; pass the time as an argument ({now_us} or {now_ms}) to verify it on a virtual clock in about a second"
	}
	fmt.Fprintf(s.cfg.Progress, "verify: %d trials run in real time: this takes ~%s (%s)\n", len(p.real), d.Round(time.Second), why)
}
