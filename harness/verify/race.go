package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// RaceFamily is the family of a client-side limiter's interleavings: K
// clients (Config.Clients) decide at one instant, each on its own
// connection, and a deterministic scheduler decides whose next round trip
// goes to Redis.
const RaceFamily = "race"

// raceMaxInterleaving is how many round trips a counter-example keeps.
const raceMaxInterleaving = 400

// racePCTSeeds is how many seeded PCT schedules run per phase, and
// racePCTDepth their depth (priority changes + 1).
const (
	racePCTSeeds = 3
	racePCTDepth = 3
)

// raceTrial is one race: the trial judged (its arrivals: the ones accepted
// before, from client 0 at +0, then the burst of the clients at one
// instant), the scheduler and how many arrivals come before the burst.
type raceTrial struct {
	trial   scenarios.Trial
	policy  func() clientside.Policy
	prefill int
}

// raceTrials are the race family's trials for the primary limit: at three
// phases of the window (L-1 accepted at +0 and the burst at +W/2, the
// seeds' story; L/2 and the burst at +0.9W; a fresh key and the burst at
// +0), each client sending 2L/K requests (at least one) at the instant of
// the burst, under round-robin, reads-first and racePCTSeeds seeded PCT
// schedules (seeds Config.Seed, +1, +2).
func (s *study) raceTrials() []raceTrial {
	l, k := s.limit, s.cfg.Clients
	per := max(1, int((2*l.Count+int64(k)-1)/int64(k)))
	phases := []struct {
		prefill int
		at      time.Duration
	}{{int(l.Count - 1), l.Window / 2}, {int(l.Count / 2), l.Window - l.Window/10}, {0, 0}}
	var out []raceTrial
	for _, ph := range phases {
		policies := []func() clientside.Policy{clientside.RoundRobin, clientside.ReadsFirst}
		for i := range racePCTSeeds {
			seed := s.cfg.Seed + int64(i)
			policies = append(policies, func() clientside.Policy { return clientside.PCT(seed, k, k*per*4, racePCTDepth) })
		}
		for _, pol := range policies {
			var arr []scenarios.Arrival
			for range ph.prefill {
				arr = append(arr, scenarios.Arrival{At: 0, Key: scenarios.UserKey, Cost: 1})
			}
			for c := range k {
				for range per {
					arr = append(arr, scenarios.Arrival{At: ph.at, Key: scenarios.UserKey, Cost: 1, Client: c})
				}
			}
			name := fmt.Sprintf("%s, %d clients x %d at +%s after %d accepted at +0", pol().Name(), k, per, ph.at, ph.prefill)
			out = append(out, raceTrial{policy: pol, prefill: ph.prefill, trial: scenarios.Trial{Family: RaceFamily, Name: name, Judge: scenarios.Safety,
				Schedule: scenarios.Schedule{Scenario: RaceFamily, Params: scenarios.Params{Limit: l.Count, Window: l.Window, Seed: s.cfg.Seed}, Arrivals: arr}}})
		}
	}
	return out
}

// race runs the race family when the target is a client-side limiter
// (custom.Gated: a client-side script, an exec target) on an injected clock with Redis keys, and adds
// it to rep: its family row, its counter-example (with the interleaving)
// when it is the most serious. Other targets: nothing.
func (s *study) race(ctx context.Context, rep *measure.VerifyReport) error {
	lim, ok := s.lim.(custom.Gated)
	if !ok || s.rdb == nil || !s.caps.InjectsTime {
		return nil
	}
	trials := s.raceTrials()
	s.progress("verify: %s: %d race trials, %d clients\n", s.lim.Name(), len(trials), s.cfg.Clients)
	fr := measure.FamilyResult{Family: RaceFamily, Verdict: measure.Holds, Mode: "virtual"}
	before := rep.Errors
	for i, rt := range trials {
		tr, err := s.runRace(ctx, lim, rt, fmt.Sprintf("%srace:%d:", s.prefix, i))
		if err != nil {
			return err
		}
		s.addTrial(rep, &fr, rt.trial, tr, true, &s.chosen)
	}
	rep.Families = append(rep.Families, fr)
	if rep.Errors > before && rep.Verdict == measure.Holds {
		rep.Verdict = measure.Inconclusive
		rep.Notes = append(rep.Notes, rep.Reason()+": errors are not a verdict (fix them and verify again)")
	}
	return nil
}

// runRace runs one race trial on keys under prefix and judges it; a
// violation carries the schedule and the interleaving.
func (s *study) runRace(ctx context.Context, lim custom.Gated, rt raceTrial, prefix string) (*trialResult, error) {
	t := rt.trial
	anchor := harness.AlignUp(harness.VirtualEpoch, t.Schedule.Params.Window)
	key := prefix + "{" + scenarios.UserKey + "}"
	call := func(seq int) harness.RaceCall {
		a := t.Schedule.Arrivals[seq]
		return harness.RaceCall{Seq: seq, Arrival: a, Key: key, At: algorithms.At(anchor.Add(a.At))}
	}
	var outcomes []harness.Outcome
	if rt.prefill > 0 { // one client, in order: no race yet
		calls := [][]harness.RaceCall{nil}
		for seq := range rt.prefill {
			calls[0] = append(calls[0], call(seq))
		}
		res, _, err := harness.Race(ctx, lim, clientside.RoundRobin(), calls)
		if err != nil {
			return nil, err
		}
		outcomes = append(outcomes, res[0]...)
	}
	calls := make([][]harness.RaceCall, s.cfg.Clients)
	for seq := rt.prefill; seq < len(t.Schedule.Arrivals); seq++ {
		c := t.Schedule.Arrivals[seq].Client
		calls[c] = append(calls[c], call(seq))
	}
	policy := rt.policy()
	res, rounds, err := harness.Race(ctx, lim, policy, calls)
	if err != nil {
		return nil, err
	}
	for _, os := range res {
		outcomes = append(outcomes, os...)
	}
	for _, o := range outcomes {
		if s.cfg.Log != nil {
			rec := o.Record(s.lim.Name(), RaceFamily)
			_ = s.cfg.Log.Write(&rec)
		}
	}
	tr := s.judge(t, ran{anchor: anchor, outcomes: outcomes, sent: t.Schedule.Arrivals}, nil, true)
	if tr.failure != nil {
		tr.failure.Schedule = policy.Name()
		tr.failure.Interleaving = interleaving(rounds, prefix)
		tr.failure.Explain += fmt.Sprintf("; %d clients' commands interleaved by %s", s.cfg.Clients, policy.Name())
	}
	return tr, nil
}

// interleaving renders rounds for a counter-example, with the trial's key
// prefix left out of the arguments ("ZCARD {user}").
func interleaving(rounds []*clientside.Round, prefix string) []measure.RoundTrip {
	out := make([]measure.RoundTrip, 0, min(len(rounds), raceMaxInterleaving))
	for i, r := range rounds {
		if i == raceMaxInterleaving {
			break
		}
		cmds := make([]string, len(r.Commands))
		for k, c := range r.Commands {
			cmds[k] = strings.ReplaceAll(strings.Join(c, " "), prefix, "")
		}
		st := measure.RoundTrip{Step: i + 1, Client: r.Client, Command: strings.Join(cmds, "; "), Reply: strings.Join(r.Replies, " ")}
		switch r.Kind {
		case clientside.KindPipeline:
			st.Command, st.Reply = "PIPELINE: "+st.Command, "["+st.Reply+"]"
		case clientside.KindTransaction:
			st.Command = "MULTI: " + st.Command + "; EXEC"
			if len(r.Replies) != 1 || r.Replies[0] != "aborted" {
				st.Reply = "[" + st.Reply + "]"
			}
		}
		out = append(out, st)
	}
	return out
}
