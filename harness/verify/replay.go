package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// Replay sends the trace of counter-example ce (from a verify.json: its
// Trace) to lim again, exactly: in virtual time, each request at the
// trace's anchor plus its At, in order, on fresh keys with key TTLs on the
// virtual clock (a script that reads no clock meets time through them
// alone, as Run's trials did), and judges the answers as ce was judged: a violation of
// the limit that broke (ce.Limit per ce.WindowMS, else cfg's primary
// window), starvation under ce.MinFidelity, interference against the same
// requests on a fresh key alone. Build lim from cfg.Limits, the limits
// recorded (targets.Spec.Build).
//
// The report's Verdict is ce's Kind when the trace fails again (its
// CounterExample then holds the replay's decisions and trace), Holds when
// it does not, Inconclusive when a call failed. One family, "replay",
// holds the figures. cfg's Limits, Timeout, MaxOutage, RunID, Seed and
// Progress are used; the other fields are not (RealTime included: a trace
// is always sent in virtual time).
//
// Errors: cfg invalid (Validate's); ce without a Trace, or of a kind
// Replay cannot judge, a field error naming "trace"; a target that Run
// would not verify in virtual time: one without Redis (rd nil), not a
// script (algorithms.Scripted, or custom.Gated: client-side, an exec target), or on a clock of
// its own; Redis errors. The keys are removed at the end.
func Replay(ctx context.Context, rd *server.Redis, lim algorithms.Limiter, cfg Config, ce *measure.CounterExample) (*measure.VerifyReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ce == nil || ce.Trace == nil || len(ce.Trace.Requests) == 0 {
		return nil, field.Errorf("trace", "the report has no counter-example with a trace to replay")
	}
	cfg = cfg.WithDefaults()
	cfg.RealTime = false // a trace is sent in virtual time, whatever the caller's setting
	s := harness.NewSession(rd, cfg.RunID, cfg.Timeout)
	st := &study{lim: lim, caps: lim.Capabilities(), cfg: cfg, prefix: s.Prefix + "verify:", limit: cfg.Primary(), limits: cfg.Limits,
		header: header(s, cfg)}
	if rd != nil {
		st.rdb = rd.Client
		// a script that reads no clock is on the virtual clock through its
		// keys' TTLs, as in the verification that found the trace
		st.expiryClock = st.onExpiryClock()
	}
	if !st.emulated() || !st.caps.InjectsTime {
		return nil, fmt.Errorf("%s cannot be replayed in virtual time: a trace replays on a script on Redis (server- or client-side) that takes an injected clock or reads no clock", lim.Name())
	}
	defer s.RemoveKeysOrSay(ctx, cfg.Progress)
	if err := s.Start(ctx); err != nil {
		return nil, fmt.Errorf("register the replay: %w", err)
	}
	src, err := st.source(ce)
	if err != nil {
		return nil, err
	}
	ctx, guard, err := s.Guard(ctx, int64(len(src.arrivals))*2*harness.BytesPerUnit, cfg.Progress)
	if err != nil {
		return nil, err
	}
	defer func() { _ = guard() }()
	st.progress("verify: replaying %d requests of the counter-example (%s, %s)\n", len(src.arrivals), ce.Family, ce.Trial)
	tr, jr, err := st.replayTrace(ctx, src, src.arrivals, st.prefix+"replay:")
	if err = harness.GuardErr(guard, err); err != nil {
		return nil, err
	}
	rep := &measure.VerifyReport{Header: st.header, Target: lim.Name(), LimitDesc: lim.Describe(), Limit: st.limit.Count,
		WindowMS: st.limit.Window.Milliseconds(), Verdict: measure.Holds, Clock: "virtual",
		Decisions: tr.decisions, Errors: tr.errors, ErrorSamples: tr.errorSamples}
	fr := measure.FamilyResult{Family: "replay", Trials: 1, Verdict: measure.Holds, MaxRatio: tr.ratio, Mode: "virtual",
		Note: fmt.Sprintf("%d requests of %s / %s", len(src.arrivals), ce.Family, ce.Trial)}
	if ce.Kind == measure.Starved {
		fr.MinFidelity = tr.fidelity
	}
	if f := tr.failure; f != nil {
		f.Family, f.Trial, f.FromHit = ce.Family, ce.Trial, st.expiryClock
		f.Trace = st.trace(src, jr, ce.Trace.Shrunk)
		f.Trace.FromRequests, f.Trace.Replays, f.Trace.Minimal = ce.Trace.FromRequests, ce.Trace.Replays, ce.Trace.Minimal
		fr.Verdict, rep.Verdict, rep.CounterExample = f.Kind, f.Kind, f
	}
	if rep.Errors > 0 {
		rep.Verdict = measure.Inconclusive
		rep.Notes = append(rep.Notes, rep.Reason()+": errors are not a verdict")
	}
	rep.Families = []measure.FamilyResult{fr}
	rep.DurationMS, rep.Complete, rep.Error = s.End(nil)
	return rep, nil
}

// source is the traceSrc of a recorded counter-example: its trial (family,
// name, how it is judged, its window and limit, its clients' skew), its
// requests and anchor, and the limit that broke.
func (s *study) source(ce *measure.CounterExample) (*traceSrc, error) {
	tc := ce.Trace
	l := limit.Limit{Count: ce.Limit, Window: s.limit.Window}
	if ce.WindowMS > 0 {
		l.Window = time.Duration(ce.WindowMS) * time.Millisecond
	}
	if l.Count < 1 {
		return nil, field.Errorf("trace", "the counter-example has no limit")
	}
	w := l.Window
	if tc.WindowMS > 0 {
		w = time.Duration(tc.WindowMS) * time.Millisecond
	}
	t := scenarios.Trial{Family: ce.Family, Name: ce.Trial,
		Schedule: scenarios.Schedule{Scenario: "replay", Params: scenarios.Params{Limit: l.Count, Window: w, Seed: s.cfg.Seed}}}
	src := &traceSrc{anchor: time.UnixMicro(tc.AnchorUS).UTC(), broke: l}
	switch ce.Kind {
	case measure.Violated:
		t.Judge = scenarios.Safety
		src.judged = judgedWindow(l.Window, s.caps.Resolution, true)
	case measure.Starved:
		t.Judge = scenarios.Liveness
		src.floor = ce.MinFidelity
		if src.floor <= 0 {
			src.floor = s.cfg.livenessFloor()
		}
	case measure.Interfered:
		t.Judge = scenarios.Isolation
	default:
		return nil, field.Errorf("trace", "a counter-example of kind %q cannot be replayed", ce.Kind)
	}
	for _, us := range tc.SkewUS {
		t.Skew = append(t.Skew, time.Duration(us)*time.Microsecond)
	}
	if len(tc.Requests) > maxTraceRequests {
		return nil, field.Errorf("trace", "%d requests, more than a verification keeps (%d)", len(tc.Requests), maxTraceRequests)
	}
	for i, r := range tc.Requests {
		if r.Cost < 1 || r.Key == "" {
			return nil, field.Errorf("trace", "request %d: want a key and a cost >= 1", i+1)
		}
		if i > 0 && r.AtUS < tc.Requests[i-1].AtUS {
			return nil, field.Errorf("trace", "request %d is earlier than the one before it", i+1)
		}
		src.arrivals = append(src.arrivals, scenarios.Arrival{At: time.Duration(r.AtUS) * time.Microsecond, Key: r.Key, Cost: r.Cost, Client: r.Client})
	}
	t.Schedule.Arrivals = src.arrivals
	src.trial = t
	return src, nil
}
