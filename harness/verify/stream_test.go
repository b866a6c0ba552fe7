package verify

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// A trial judged as it runs (its judgement the job's Sink, told each
// outcome in schedule order) gets the judgement of the same run judged
// whole: the same counts, ratio, fidelity, failure and trace, for safety
// on two limits, liveness and isolation with its control, on random runs
// (bursts at one instant, several keys and clients, costs, denials,
// errors).
func TestJudgedAsItRuns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	seen := map[measure.Verdict]int{}
	anchor := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for n := range 300 {
		l := limit.Limit{Count: 1 + int64(r.IntN(20)), Window: time.Duration(5+r.IntN(50)) * time.Microsecond}
		s := &study{caps: algorithms.Capabilities{InjectsTime: true, Resolution: time.Microsecond}, limit: l,
			limits: []limit.Limit{l, {Count: 2 * l.Count, Window: 3 * l.Window}}, cfg: Config{MinFidelity: 0.5}}
		judge := []scenarios.Judge{scenarios.Safety, scenarios.Liveness, scenarios.Isolation}[n%3]
		tr := scenarios.Trial{Family: "f", Name: fmt.Sprint(n), Judge: judge,
			Schedule: scenarios.Schedule{Params: scenarios.Params{Limit: l.Count, Window: l.Window}}}
		allow := 1 + r.IntN(9) // in 10
		run := func(keys []string) ran {
			jr := ran{anchor: anchor}
			at := time.Duration(r.IntN(2000)) - 1000
			for k := range 1 + r.IntN(1500) {
				if r.IntN(3) > 0 {
					at += time.Duration(r.IntN(int(l.Window) * 2000 / max(1, 1+r.IntN(8))))
				}
				a := scenarios.Arrival{At: at, Key: keys[r.IntN(len(keys))], Cost: 1 + int64(r.IntN(3)), Client: r.IntN(3)}
				o := harness.Outcome{Seq: k, Arrival: a, Decision: algorithms.Decision{Allowed: r.IntN(10) < allow}}
				if r.IntN(500) == 0 {
					o.Err = errors.New("a failed call")
				}
				jr.sent = append(jr.sent, a)
				jr.outcomes = append(jr.outcomes, o)
			}
			return jr
		}
		jr := run([]string{scenarios.UserKey, "b", scenarios.IsolationKey})
		var ctl *ran
		if judge == scenarios.Isolation {
			c := run([]string{scenarios.IsolationKey})
			ctl = &c
		}
		whole := s.judge(tr, jr, ctl, true)
		j := s.judgement(tr, true, ctl != nil)
		feed(j, jr)
		j.End()
		if ctl != nil {
			feed(j.control, *ctl)
			j.control.End()
		}
		streamed := j.finish()
		for _, x := range []*trialResult{whole, streamed} {
			srcs := []*traceSrc{x.src, x.starvedSrc}
			for _, lj := range x.byLimit {
				srcs = append(srcs, lj.src)
			}
			for _, src := range srcs {
				if src != nil {
					src.trial, src.arrivals = scenarios.Trial{}, nil
				}
			}
		}
		if !reflect.DeepEqual(whole, streamed) {
			t.Fatalf("case %d (%v, limit %s): judged whole %+v (src %+v), as it ran %+v (src %+v)", n, judge, l, whole, whole.src, streamed, streamed.src)
		}
		if whole.failure != nil {
			seen[whole.failure.Kind]++
		}
	}
	for _, kind := range []measure.Verdict{measure.Violated, measure.Starved, measure.Interfered} {
		if seen[kind] == 0 {
			t.Errorf("no case was %s: the cases test too little", kind)
		}
	}
}
