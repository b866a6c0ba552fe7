package clientside

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
)

// Policy decides which waiting client's round trip goes next.
// Implementations are used by one Interleave at a time.
type Policy interface {
	// Name describes the policy and its seed, e.g. "pct(seed 7, depth 3)".
	Name() string
	// Pick returns the index in waiting (sorted by client, never empty) of
	// the round to grant at step (counted from 0).
	Pick(step int, waiting []*Round) int
}

// RoundRobin grants the clients in turn: the next waiting client after the
// last one granted.
func RoundRobin() Policy { return &roundRobin{last: -1} }

type roundRobin struct{ last int }

func (p *roundRobin) Name() string { return "round-robin" }

func (p *roundRobin) Pick(_ int, waiting []*Round) int {
	for i, r := range waiting {
		if r.Client > p.last {
			p.last = r.Client
			return i
		}
	}
	p.last = waiting[0].Client
	return 0
}

// ReadsFirst is the check-then-act worst case: every client's reads before
// any client's write that follows a read. It grants, lowest client first, a
// round of reads; else a round of a client that has not read yet in its
// decision (so that it gets to its reads); only then a write of a client
// that has read.
func ReadsFirst() Policy { return readsFirst{} }

type readsFirst struct{}

func (readsFirst) Name() string { return "reads-first" }

func (readsFirst) Pick(_ int, waiting []*Round) int {
	for i, r := range waiting {
		if r.Read {
			return i
		}
	}
	for i, r := range waiting {
		if !r.ReadBefore {
			return i
		}
	}
	return 0
}

// PCT is a seeded random schedule with priority changes (Burckhardt et al.,
// "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs",
// ASPLOS 2010): each client gets a random priority, the highest waiting
// one runs, and at depth-1 random steps in 0..steps-1 the client that just
// ran drops below all others. The same seed, clients, steps and depth give
// the same schedule.
func PCT(seed int64, clients, steps, depth int) Policy {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	p := &pct{seed: seed, depth: depth, prio: map[int]int{}, change: map[int]bool{}, last: -1}
	for i, c := range rng.Perm(clients) {
		p.prio[c] = depth + i // above every lowered priority
	}
	for i := 0; i < depth-1 && steps > 0; i++ {
		p.change[rng.IntN(steps)] = true
	}
	return p
}

type pct struct {
	seed   int64
	depth  int
	prio   map[int]int
	change map[int]bool
	low    int // the next lowered priority (counts down from depth-1)
	last   int
}

func (p *pct) Name() string { return fmt.Sprintf("pct(seed %d, depth %d)", p.seed, p.depth) }

func (p *pct) Pick(step int, waiting []*Round) int {
	if p.change[step] && p.last >= 0 {
		p.low--
		p.prio[p.last] = p.low
	}
	best := 0
	for i, r := range waiting {
		if p.prio[r.Client] > p.prio[waiting[best].Client] {
			best = i
		}
	}
	p.last = waiting[best].Client
	return best
}

// Interleave runs body for clients 0..k-1, each in its own goroutine, and
// serialises their round trips: a client's round waits at its gate until
// every running client is either waiting at a gate or finished, then policy
// grants one. So the order of all rounds depends on the policy alone (and
// on what the bodies do, not on how fast they run): the same policy and
// seed give the same interleaving. body must call gate (an Exec.Gate)
// before each round trip and touch Redis only through it.
//
// Returns the rounds in the order granted (with their replies) and the
// first error a body returned. A cancelled ctx releases every waiting gate
// with its error.
func Interleave(ctx context.Context, k int, policy Policy, body func(ctx context.Context, client int, gate func(context.Context, *Round) error) error) ([]*Round, error) {
	type event struct {
		client int
		round  *Round // nil: the body returned
		err    error
		grant  chan error
	}
	events := make(chan event)
	for c := 0; c < k; c++ {
		go func() {
			gate := func(ctx context.Context, r *Round) error {
				g := make(chan error, 1)
				select {
				case events <- event{client: c, round: r, grant: g}:
				case <-ctx.Done():
					return ctx.Err()
				}
				return <-g
			}
			err := body(ctx, c, gate)
			events <- event{client: c, err: err}
		}()
	}
	var (
		order    []*Round
		firstErr error
		waiting  = map[int]event{}
		running  = k
		step     int
	)
	for running > 0 || len(waiting) > 0 {
		if running > 0 {
			ev := <-events
			running--
			if ev.round == nil {
				if ev.err != nil && firstErr == nil {
					firstErr = ev.err
				}
				continue
			}
			waiting[ev.client] = ev
			continue
		}
		if err := ctx.Err(); err != nil {
			for c, ev := range waiting {
				ev.grant <- err
				delete(waiting, c)
				running++
			}
			continue
		}
		rounds := make([]*Round, 0, len(waiting))
		for _, ev := range waiting {
			rounds = append(rounds, ev.round)
		}
		sort.Slice(rounds, func(a, b int) bool { return rounds[a].Client < rounds[b].Client })
		r := rounds[policy.Pick(step, rounds)]
		step++
		ev := waiting[r.Client]
		delete(waiting, r.Client)
		order = append(order, r)
		running++
		ev.grant <- nil
	}
	return order, firstErr
}
