package verify

import (
	"fmt"
	"slices"
	"time"

	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// Why a liveness trial starved, read from its decisions.
//
// While a liveness trial runs, its judgement keeps, per cost, the units
// offered, accepted, and accepted by the exact sliding log it is judged
// against, and per key the longest run of denials: from the first request
// denied after the last one accepted to the last request denied before
// the next one accepted (or the end of the trial), with the units the key
// had been accepted before it and those the log accepted during it. A
// starved trial's cause is the first that fits:
//
//   - cost above a burst: every request of cost c or more was denied,
//     where the log admitted some of them, while cheaper requests were
//     admitted (a strict GCRA, burst 1, never admits cost 2: its bucket
//     holds one request's worth);
//   - lock-out: a key was denied for longer than the window, where the log
//     admitted some of its requests meanwhile — under the trials' steady
//     overload the log admits something in every window;
//   - under-admission: neither: the limiter admitted, but too little.

// keyLife is one key's decisions in a liveness trial: units accepted so
// far, the run of denials under way (in) and the longest one.
type keyLife struct {
	accepted int64
	in       bool
	cur      denials
	longest  denials
}

// denials is a run of denied requests on one key: from start to last
// (times from the anchor), after before units were accepted, while the
// ideal log accepted ideal units of them; open: the trial ended within it.
type denials struct {
	start, last   time.Duration
	before, ideal int64
	open          bool
}

func (d denials) length() time.Duration { return d.last - d.start }

// observe adds x, a decision of a liveness trial (in time order), to the
// figures the cause is read from; ideal says the ideal log accepted it.
func (j *judgement) observe(x timed, ideal bool) {
	c := j.costs[x.cost]
	if c == nil {
		c = new([3]int64)
		j.costs[x.cost] = c
	}
	c[0] += x.cost
	if ideal {
		c[2] += x.cost
	}
	k := j.lives[x.key]
	if k == nil {
		k = &keyLife{}
		j.lives[x.key] = k
	}
	if x.ok {
		c[1] += x.cost
		k.close(false)
		k.accepted += x.cost
		return
	}
	if !k.in {
		k.in, k.cur = true, denials{start: x.lo, before: k.accepted}
	}
	k.cur.last = x.lo
	if ideal {
		k.cur.ideal += x.cost
	}
}

// close ends k's run of denials, if one is under way (open: at the end of
// the trial), keeping the longest.
func (k *keyLife) close(open bool) {
	if !k.in {
		return
	}
	k.in, k.cur.open = false, open
	if k.cur.length() > k.longest.length() || k.longest == (denials{}) {
		k.longest = k.cur
	}
}

// cause classifies the starvation of the liveness trial j judged, against
// its limit, with a sentence that gives the figures.
func (j *judgement) cause() (measure.LivenessCause, string) {
	costs := make([]int64, 0, len(j.costs))
	for c := range j.costs {
		costs = append(costs, c)
	}
	slices.Sort(costs)
	// the smallest cost from which on nothing was admitted, with something
	// admitted below it
	from := -1
	for i := len(costs) - 1; i >= 0 && j.costs[costs[i]][1] == 0; i-- {
		from = i
	}
	var ideal int64
	if from > 0 {
		for _, c := range costs[from:] {
			ideal += j.costs[c][2]
		}
	}
	if ideal > 0 {
		return measure.CostAboveBurst, fmt.Sprintf("requests of cost ≥ %d were never admitted (0 of the %d units an exact sliding log admits), while cost %d was",
			costs[from], ideal, costs[from-1])
	}
	var worst denials
	for _, k := range j.lives {
		k.close(true)
		if k.longest.length() > worst.length() {
			worst = k.longest
		}
	}
	w := j.liveLimit.Window
	if worst.length() > w && worst.ideal > 0 {
		after := fmt.Sprintf("after its first %d", worst.before)
		if worst.before == 0 {
			after = "from its first request"
		}
		how := "then admitted again"
		if worst.open {
			how = "to the end of the trial: the lock-out lasted as long as the requests kept coming"
		}
		return measure.LockOut, fmt.Sprintf("a client sending steadily was denied for %s %s, longer than the window %s, where an exact sliding log admits %d units (%s)",
			limit.FormatRough(worst.length()), after, limit.FormatWindow(w), worst.ideal, how)
	}
	return measure.UnderAdmission, fmt.Sprintf("admissions came throughout (no key denied for longer than %s, the window %s) but too few",
		limit.FormatRough(worst.length()), limit.FormatWindow(w))
}
