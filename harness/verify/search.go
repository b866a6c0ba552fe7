package verify

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/scenarios"
)

// The searching adversary (scenarios.Search): random restarts and
// hill-climbing over burst programs (scenarios.Program), each candidate
// run against the target one call at a time in virtual time on keys of
// its own and judged like any trial; the candidate with the highest
// max-in-window over the limit (the judge's ratio) is kept.
//
// The search is bounded by calls, not by time: each restart may make
// Decisions/Restarts calls (the calls its candidates actually made are
// counted), so with the same seed, budget and target it tries the same
// candidates and keeps the same one on any machine; only how long it takes
// depends on the machine. Config.Budget sets Decisions (SearchRate calls
// per second of budget).

// SearchRate is how many calls of the searching adversary one second of
// Config.Budget buys: about what one client makes in a second on a 2-core
// machine (one call per round trip).
const SearchRate = 5000

// searchDecisions is the searching adversary's call budget for cfg:
// Budget * SearchRate, none when Budget is negative.
func (c Config) searchDecisions() int64 {
	if c.Budget < 0 {
		return 0
	}
	return int64(c.Budget.Seconds() * SearchRate)
}

// adaptiveFamily reports whether fam is one of the adaptive families of
// scenarios/adaptive.go (virtual time, one call at a time).
func adaptiveFamily(fam string) bool {
	return fam == scenarios.CautiousFamily || fam == scenarios.ExpiryFamily || fam == scenarios.SearchFamily
}

// candidate is a genome, its burst program and its judgement.
type candidate struct {
	g     genome
	res   *trialResult
	ratio float64
}

// genome is what the search varies: groups of bursts, each burst repeated
// after a gap from the previous copy's last request; cautious or not.
type genome struct {
	groups   []group
	cautious bool
}

// group is one burst sent repeat times (>= 1), each copy gap after the
// previous copy's last request.
type group struct {
	b      scenarios.Burst
	repeat int
	gap    time.Duration
}

// program expands g into its bursts.
func (g genome) program() scenarios.Program {
	p := scenarios.Program{Cautious: g.cautious}
	for _, gr := range g.groups {
		b := gr.b
		for k := 0; k < max(gr.repeat, 1); k++ {
			p.Bursts = append(p.Bursts, b)
			b.At = end(b) + gr.gap
		}
	}
	return p
}

// runSearch runs search trial t on keys under prefix: Restarts hill-climbs,
// one after another, and returns the judgement of the best candidate found, with
// every candidate's decisions and errors counted. An error stops it (a
// cancelled ctx, an outage).
func (s *study) runSearch(ctx context.Context, t scenarios.Trial, prefix string) (*trialResult, error) {
	sp := *t.Search
	restarts := max(sp.Restarts, 1)
	least := t.Schedule.Params.Limit
	for _, l := range s.limits {
		least = min(least, l.Count)
	}
	best := make([]*candidate, restarts)
	errs := make([]error, restarts)
	decisions, errors := make([]int64, restarts), make([]int64, restarts)
	samples := make([][]string, restarts)
	// one restart after another: one connection, whatever the budget
	for r := range restarts {
		h := &hillClimb{s: s, t: t, sp: sp, rng: rand.New(rand.NewPCG(uint64(sp.Seed), uint64(r)+1)),
			prefix: fmt.Sprintf("%sr%d:", prefix, r), left: sp.Decisions / int64(restarts), maxCost: least}
		best[r], errs[r] = h.run(ctx, r)
		decisions[r], errors[r] = h.decisions, h.errors
		samples[r] = h.samples
		if errs[r] != nil {
			break
		}
	}
	var top *candidate
	for r, c := range best {
		if errs[r] != nil {
			return nil, errs[r]
		}
		if c != nil && (top == nil || c.ratio > top.ratio) {
			top = c
		}
	}
	if top == nil {
		return nil, nil
	}
	tr := *top.res
	tr.decisions, tr.errors, tr.errorSamples = 0, 0, nil
	for r := range restarts {
		tr.decisions += decisions[r]
		tr.errors += errors[r]
		for _, e := range samples[r] {
			if len(tr.errorSamples) < 2 {
				tr.errorSamples = append(tr.errorSamples, e)
			}
		}
	}
	return &tr, nil
}

// hillClimb is one restart of the search.
type hillClimb struct {
	s      *study
	t      scenarios.Trial
	sp     scenarios.Search
	rng    *rand.Rand
	prefix string
	// maxCost is the largest cost sent: the smallest of the study's limits
	maxCost int64
	left    int64 // calls left
	n       int   // candidates tried
	tally         // every candidate's decisions and errors, and the first errors
}

// run climbs from a start (restart 0: two bursts of L across a boundary;
// 1: bursts of L a random gap apart; the others random): a mutation that does not lower the ratio is kept,
// until the calls are spent. It returns the best candidate.
func (h *hillClimb) run(ctx context.Context, restart int) (*candidate, error) {
	start := h.random()
	switch restart {
	case 0:
		start = h.boundary()
	case 1:
		start = h.repeated()
	}
	cur, err := h.eval(ctx, start)
	if err != nil || cur == nil {
		return cur, err
	}
	best := cur
	for h.left > 0 {
		next, err := h.eval(ctx, h.mutate(cur.g))
		if err != nil {
			return best, err
		}
		if next == nil {
			break
		}
		if next.ratio >= cur.ratio {
			cur = next
		}
		if next.ratio > best.ratio {
			best = next
		}
	}
	return best, nil
}

// eval runs genome g's program as a trial of the search family and judges
// it; nil when the calls left do not cover it.
func (h *hillClimb) eval(ctx context.Context, g genome) (*candidate, error) {
	prog := g.program()
	calls := int64(prog.Calls())
	if calls > h.left || calls == 0 {
		return nil, nil
	}
	jr, tr, err := h.s.runProgram(ctx, h.t, prog, fmt.Sprintf("%s%d:", h.prefix, h.n))
	h.n++
	h.left -= max(int64(len(jr.outcomes)), 1)
	if err != nil {
		return nil, err
	}
	h.add(tr)
	return &candidate{g: g, res: tr, ratio: tr.ratio}, nil
}

// The shape of the programs searched: 1..maxGroups groups of bursts of
// 1..2L requests, at most maxCalls(L) requests in all, starting within
// [-W, 3W] of the anchor.
const maxGroups = 4

// maxCalls is the most requests of one candidate: the greedy family's.
func maxCalls(L int64) int64 { return 40*L + 200 }

func (h *hillClimb) limit() int64             { return h.t.Schedule.Params.Limit }
func (h *hillClimb) window() time.Duration    { return h.t.Schedule.Params.Window }
func (h *hillClimb) res() time.Duration       { return max(h.sp.Resolution, time.Microsecond) }
func (h *hillClimb) coin(p float64) bool      { return h.rng.Float64() < p }
func (h *hillClimb) between(a, b int64) int64 { return a + h.rng.Int64N(b-a+1) }

// boundary is the first restart's start: L ending just before the
// boundary, L from it, cautious.
func (h *hillClimb) boundary() genome {
	L, r := h.limit(), h.res()
	return genome{cautious: true, groups: []group{
		{b: scenarios.Burst{At: -time.Duration(L) * r, N: L, Cost: 1, Step: r}, repeat: 1},
		{b: scenarios.Burst{At: 0, N: L, Cost: 1, Step: r}, repeat: 1},
	}}
}

// repeated is the second restart's start: bursts of L from 0, cautious,
// repeated 2..16 times a log-uniform gap in [res, W] apart.
func (h *hillClimb) repeated() genome {
	L, r := h.limit(), h.res()
	return h.fit(genome{cautious: true, groups: []group{
		{b: scenarios.Burst{At: 0, N: L, Cost: 1, Step: r}, repeat: int(h.between(2, 16)), gap: h.logUniform(r, h.window())},
	}})
}

// random is a random genome: 1..3 groups, the first in [-W, 0), each
// after a log-uniform gap in [res, 2W].
func (h *hillClimb) random() genome {
	g := genome{cautious: h.coin(0.5)}
	at := -time.Duration(h.rng.Int64N(int64(h.window()/h.res()))+1) * h.res()
	for k := int(h.between(1, 3)); k > 0; k-- {
		gr := group{b: scenarios.Burst{At: at, N: h.size(), Cost: h.cost(), Step: h.step()}, repeat: h.repeat(), gap: h.gap()}
		g.groups = append(g.groups, gr)
		at = groupEnd(gr) + h.gap()
	}
	return h.fit(g)
}

// repeat is 1 or 2 (half the time), else log-uniform in 1..64.
func (h *hillClimb) repeat() int {
	if h.coin(0.5) {
		return int(h.between(1, 2))
	}
	return int(math.Exp(h.rng.Float64() * math.Log(64)))
}

// size is a random burst size: L, L-1, or uniform in 1..2L.
func (h *hillClimb) size() int64 {
	L := h.limit()
	switch x := h.rng.Float64(); {
	case x < 0.3:
		return L
	case x < 0.5:
		return max(L-1, 1)
	}
	return h.between(1, 2*L)
}

// cost is 1, or (when the target takes costs) one of 1, 2, L/4, L/2, L-1, L.
func (h *hillClimb) cost() int64 {
	if !h.sp.CanCost || h.coin(0.6) {
		return 1
	}
	L := h.limit()
	c := []int64{1, 2, L / 4, L / 2, L - 1, L}[h.rng.IntN(6)]
	return min(max(c, 1), L)
}

// step is 0, the resolution, or log-uniform in [res, W/L].
func (h *hillClimb) step() time.Duration {
	switch x := h.rng.Float64(); {
	case x < 0.2:
		return 0
	case x < 0.6:
		return h.res()
	}
	return h.logUniform(h.res(), max(h.window()/time.Duration(h.limit()), h.res()))
}

// gap is log-uniform in [res, 2W], or just before or past W.
func (h *hillClimb) gap() time.Duration {
	W := h.window()
	switch x := h.rng.Float64(); {
	case x < 0.15:
		return W - h.res()*time.Duration(h.between(1, 3))
	case x < 0.25:
		return W + h.res()
	}
	return h.logUniform(h.res(), 2*W)
}

// logUniform is a whole number of resolutions in [lo, hi], log-uniform.
func (h *hillClimb) logUniform(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	x := math.Exp(math.Log(float64(lo)) + h.rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo))))
	return max(time.Duration(x).Truncate(h.res()), lo)
}

// end is the time of burst b's last request.
func end(b scenarios.Burst) time.Duration { return b.At + time.Duration(max(b.N-1, 0))*b.Step }

// groupEnd is the time of group gr's last request.
func groupEnd(gr group) time.Duration {
	n := time.Duration(max(gr.repeat, 1))
	return gr.b.At + n*(end(gr.b)-gr.b.At) + (n-1)*gr.gap
}

// scale multiplies d by a factor in [1/4, 4] (log-uniform), at least res.
func (h *hillClimb) scale(d time.Duration) time.Duration {
	f := math.Exp((h.rng.Float64()*2 - 1) * math.Log(4))
	return max(time.Duration(float64(d)*f).Truncate(h.res()), h.res())
}

// mutate changes one thing of g: a group's start (and the later ones with
// it), size, cost, step, repeat count or gap; the mode; a group added or
// removed.
func (h *hillClimb) mutate(g genome) genome {
	q := genome{cautious: g.cautious, groups: append([]group(nil), g.groups...)}
	i := h.rng.IntN(len(q.groups))
	gr := &q.groups[i]
	switch h.rng.IntN(10) {
	case 0, 1: // move group i and the later ones: by a fraction of W, or by a few resolutions
		var d time.Duration
		if h.coin(0.5) {
			d = h.window() >> h.between(1, 24)
		} else {
			d = h.res() << h.between(0, 10)
		}
		if h.coin(0.5) {
			d = -d
		}
		for k := i; k < len(q.groups); k++ {
			q.groups[k].b.At += d
		}
	case 2: // size
		if h.coin(0.5) {
			gr.b.N = max(1, gr.b.N+h.between(-2, 2))
		} else {
			gr.b.N = h.size()
		}
	case 3:
		gr.b.Cost = h.cost()
	case 4:
		gr.b.Step = h.step()
	case 5: // repeat count
		if h.coin(0.5) {
			gr.repeat = max(1, gr.repeat+int(h.between(-2, 2)))
		} else {
			gr.repeat = max(1, gr.repeat*int(h.between(1, 2))/int(h.between(1, 2)))
		}
	case 6: // gap between copies
		if h.coin(0.5) {
			gr.gap = h.scale(gr.gap)
		} else {
			gr.gap = h.gap()
		}
	case 7:
		q.cautious = !q.cautious
	case 8: // a group more, after the last
		if len(q.groups) < maxGroups {
			last := q.groups[len(q.groups)-1]
			b := scenarios.Burst{At: groupEnd(last) + h.gap(), N: h.size(), Cost: h.cost(), Step: h.step()}
			q.groups = append(q.groups, group{b: b, repeat: h.repeat(), gap: h.gap()})
		}
	case 9: // a group less
		if len(q.groups) > 1 {
			q.groups = append(q.groups[:i], q.groups[i+1:]...)
		}
	}
	return h.fit(q)
}

// fit keeps g in shape: groups in time order, not overlapping, within
// [-W, 3W], at most 2L requests a burst and maxCalls(L) in all (repeat
// counts cut down).
func (h *hillClimb) fit(g genome) genome {
	W, L := h.window(), h.limit()
	prev := -W
	var calls int64
	for k := range g.groups {
		gr := &g.groups[k]
		gr.b.N = min(max(gr.b.N, 1), 2*L)
		gr.b.Cost = min(max(gr.b.Cost, 1), L, h.maxCost)
		gr.b.Step = max(gr.b.Step, 0)
		gr.b.At = min(max(gr.b.At, prev), 3*W)
		gr.gap = max(gr.gap, 0)
		gr.repeat = max(gr.repeat, 1)
		if left := maxCalls(L) - calls; int64(gr.repeat)*gr.b.N > left {
			gr.repeat = max(int(left/gr.b.N), 1)
		}
		calls += int64(gr.repeat) * gr.b.N
		prev = groupEnd(*gr)
	}
	return g
}

// tally counts the decisions and errors of every program an adaptive
// family ran, and keeps the first two error samples.
type tally struct {
	decisions, errors int64
	samples           []string
}

func (c *tally) add(tr *trialResult) {
	c.decisions += tr.decisions
	c.errors += tr.errors
	for _, e := range tr.errorSamples {
		if len(c.samples) < 2 {
			c.samples = append(c.samples, e)
		}
	}
}

// runProgram runs prog as one program of trial t (its search and probe
// taken off: a plain program) in virtual time, on keys under prefix, and
// judges it. It returns what was sent and got back, with the judgement
// (nil on an error: a cancelled ctx, an outage).
func (s *study) runProgram(ctx context.Context, t scenarios.Trial, prog scenarios.Program, prefix string) (ran, *trialResult, error) {
	t.Search, t.Probe, t.Program = nil, nil, &prog
	t.Name = prog.String()
	t.Schedule.Arrivals = []scenarios.Arrival{{At: prog.Bursts[0].At, Key: scenarios.UserKey, Cost: 1}}
	var got harness.Collector
	job := s.job(t, prefix)
	job.Sink = &got
	res, err := s.runner(harness.VirtualClock).Adaptive(ctx, job, s.client(t))
	jr := ranOf(res.Anchor, got.Outcomes)
	if err != nil {
		return jr, nil, err
	}
	return jr, s.judge(t, jr, nil, true), nil
}
