package verify

import "github.com/ratelab/ratelab/harness"

// estimateBytes is the upper bound of bytes the planned trials write to
// the target's Redis (harness.BytesPerUnit per cost unit): every trial's
// arrivals once per clock it runs on, twice over (isolation controls and
// the retries of trials that failed), and the adaptive trials' MaxCalls.
func (p plan) estimateBytes() int64 {
	var total int64
	for _, idx := range [][]int{p.virtual, p.real} {
		for _, i := range idx {
			total += 2 * p.shapes[i].units * harness.BytesPerUnit // harness.ScheduleBytes
		}
	}
	for _, i := range p.greedy {
		total += int64(p.trials[i].MaxCalls()) * harness.BytesPerUnit
	}
	return total
}
