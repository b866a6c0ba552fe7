package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/usercmd"
)

// RaceCall is one decision of a client in Race: the arrival (Seq its index
// in its schedule), the full key it is decided on and the clock it is
// decided at.
type RaceCall struct {
	Seq     int
	Arrival scenarios.Arrival
	Key     string
	At      algorithms.Clock
}

// Race decides the calls of several clients on a limiter whose round
// trips can be gated (custom.Gated: a client-side script, an exec
// target): calls[c] in order, by client c, each on a client of its own
// (custom.Gated.GatedClient), with every round trip of every client
// granted by policy (clientside.Interleave): the interleaving is the
// policy's alone, the same for the same policy and seed. Returns each
// client's outcomes in call order (Sent and Recv bracket the decision on
// the local clock) and the rounds in the order they went. A decision's
// error is its Outcome's; the error returned is a client that could not
// be opened, a command the policy refused (wrapping its
// *usercmd.Refusal), or ctx's.
func Race(ctx context.Context, lim custom.Gated, policy clientside.Policy, calls [][]RaceCall) ([][]Outcome, []*clientside.Round, error) {
	out := make([][]Outcome, len(calls))
	clients := make([]custom.GatedClient, len(calls))
	for c, cs := range calls {
		if len(cs) == 0 {
			continue
		}
		gc, err := lim.GatedClient(ctx, cs[0].Key)
		if err != nil {
			return nil, nil, err
		}
		defer func() { _ = gc.Close() }()
		clients[c] = gc
	}
	rounds, err := clientside.Interleave(ctx, len(calls), policy, func(ctx context.Context, c int, gate func(context.Context, *clientside.Round) error) error {
		for _, call := range calls[c] {
			o := Outcome{Seq: call.Seq, Arrival: call.Arrival, Sent: time.Now()}
			o.Decision, o.Err = clients[c].Decide(ctx, c, gate, call.Key, call.Arrival.Cost, call.At)
			o.Recv = time.Now()
			if o.Err != nil {
				o.Decision.DecidedAt, _ = call.At.Injected()
			}
			out[c] = append(out[c], o)
			if errors.As(o.Err, new(*usercmd.Refusal)) {
				return o.Err // a command the policy refused: the race stops
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return out, rounds, fmt.Errorf("client-side race: %w", err)
	}
	return out, rounds, nil
}

// raceInstant decides the arrivals seqs of several clients at one instant
// of a virtual run on a limiter whose round trips can be gated: through Race, clients in
// turn (clientside.RoundRobin), so that a run's count is the same on every
// run and every machine. The outcomes go to out[seq], and are recorded.
func (r *Runner) raceInstant(ctx context.Context, j Job, arr []scenarios.Arrival, lim custom.Gated, byClient map[int][]int, anchor time.Time, at algorithms.Clock, out []Outcome, base int) {
	clients := make([]int, 0, len(byClient))
	for c := range byClient {
		clients = append(clients, c)
	}
	sort.Ints(clients)
	calls := make([][]RaceCall, len(clients))
	for i, c := range clients {
		for _, seq := range byClient[c] {
			a := arr[seq]
			cat := at
			if t, ok := at.Injected(); ok && r.Clock == VirtualClock {
				cat = algorithms.At(t.Add(j.ClockSkew(a.Client)))
			}
			calls[i] = append(calls[i], RaceCall{Seq: seq, Arrival: a, Key: j.Prefix + "{" + a.Key + "}", At: cat})
		}
	}
	res, _, err := Race(ctx, lim, clientside.RoundRobin(), calls)
	for i, c := range clients {
		for k, seq := range byClient[c] {
			var o Outcome
			if i < len(res) && k < len(res[i]) {
				o = res[i][k]
			} else {
				o = Outcome{Seq: seq, Arrival: arr[seq], Sent: time.Now(), Recv: time.Now(), Err: err}
				if o.Err == nil {
					o.Err = ctx.Err()
				}
				o.Decision.DecidedAt, _ = at.Injected()
			}
			r.settle(o.Err)
			r.record(j, anchor, &o)
			out[seq-base] = o
		}
	}
}
