package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Limit is the property to check: at most Limit.Limit in any Limit.Window.
	Limit algorithms.Limit
	// Skew, when > 0, adds the skewed-client-clock family to the verdict.
	// Without it the family still runs with SkewProbe and is reported as a
	// sensitivity figure only.
	Skew time.Duration
	// SkewProbe is the delta of the sensitivity figure; zero means W/100.
	SkewProbe time.Duration
	// RealTimeMax: real-time families run only when the window is at most
	// this long (they take about two windows); zero means 1 minute.
	RealTimeMax time.Duration
	// Clients is the number of concurrent clients; zero means 8.
	Clients int
	// Seed seeds the random trials.
	Seed int64
	// Prefix is the key prefix of the verification's keys (removed at the
	// end); empty picks "ratelab:<new run id>:verify:".
	Prefix string
	// Log receives every decision; nil discards them.
	Log *measure.DecisionLog
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
	// Timeout bounds each decision call (zero: 500 ms); MaxOutage stops the
	// verification with an error wrapping ErrOutage when calls keep failing
	// that long (zero: 2 s), so a Redis that dies or hangs never holds a CI
	// job. A failed call is an error in the report, never a verdict.
	Timeout   time.Duration
	MaxOutage time.Duration
}

// Verify drives lim (on rdb, which is nil for an HTTP endpoint) with every adversarial family and judges what it
// accepted: a violation when more than the limit was accepted within one
// window, starvation when accepted / ideal < 0.9 under sustained overload,
// interference when one key's traffic limited another. It never cries wolf:
// decision times are the limiter's own when it takes an injected clock (judged
// at its resolution: a set counts only when it fits in W minus the
// resolution); otherwise a set of decisions counts as inside one window only
// when the last answer came less than W - resolution after the first send.
//
// Errors: a failing probe call (the script does not compile, the reply has
// the wrong shape, Redis is gone) returns an error before any trial. Errors
// during trials are counted in the report. The keys are removed at the end.
func Verify(ctx context.Context, rdb redis.UniversalClient, lim algorithms.Limiter, o VerifyOptions) (*measure.VerifyReport, error) {
	start := time.Now()
	if err := o.Limit.Validate(); err != nil {
		return nil, err
	}
	L, W := o.Limit.Limit, o.Limit.Window
	caps := lim.Capabilities()
	inject, cost, res, keys := caps.InjectsTime, caps.TakesCost, caps.Resolution, caps.UsesKeys
	if o.Prefix == "" {
		o.Prefix = engine.KeyPrefix + engine.NewRunID() + ":verify:"
	}
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.MaxOutage <= 0 {
		o.MaxOutage = 2 * time.Second
	}
	if o.RealTimeMax <= 0 {
		o.RealTimeMax = time.Minute
	}
	probe := o.SkewProbe
	if o.Skew > 0 {
		probe = o.Skew
	}
	if probe <= 0 {
		probe = W / 100
	}
	defer func() {
		if rdb == nil {
			return
		}
		// a few round trips: a Redis that hangs cannot hold the verification
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(2*o.Timeout, time.Second))
		defer cancel()
		if ks, err := engine.ScanKeys(cctx, rdb, o.Prefix); err == nil {
			_ = engine.DeleteKeys(cctx, rdb, ks)
		}
	}()

	// one probe decision: a script that does not compile or answers in the
	// wrong shape is an error, not a verdict
	if _, err := lim.Allow(ctx, o.Prefix+"{probe}", 1, algorithms.At(VirtualEpoch)); err != nil {
		return nil, err
	}

	rep := &measure.VerifyReport{Target: lim.Name(), LimitDesc: lim.Describe(), Limit: L, WindowMS: W.Milliseconds(), Verdict: measure.Holds}
	switch {
	case inject:
		rep.Clock = "virtual+real"
	case keys:
		rep.Clock = "redis"
	default:
		rep.Clock = "real"
	}
	params := scenarios.Params{Limit: L, Window: W, Seed: o.Seed}
	trials := scenarios.Adversarial(params, scenarios.Target{Cost: cost, Keys: keys, Clients: o.Clients, Skew: probe})

	realOK := W <= o.RealTimeMax
	var virtual, real []int
	for i, t := range trials {
		switch {
		case t.Family == "skew" && !inject:
			continue // the script reads the server's clock: no client clock to skew
		case inject && !t.RealTime:
			virtual = append(virtual, i)
		case realOK:
			real = append(real, i)
		}
	}
	results := make([]*trialResult, len(trials))
	runBatch := func(idx []int, clock ClockMode) error {
		if len(idx) == 0 {
			return nil
		}
		jobs := make([]Job, len(idx))
		for k, i := range idx {
			jobs[k] = Job{Limiter: lim, Limit: o.Limit, Schedule: trials[i].Schedule, Skew: trials[i].Skew,
				Prefix: fmt.Sprintf("%s%d:", o.Prefix, i)}
		}
		// a target on an injected clock met the boundaries in virtual time:
		// its real-time trials need not wait for one
		r := &Runner{Redis: rdb, Clock: clock, Log: o.Log, Progress: o.Progress, Parallel: 8, Unaligned: inject,
			Timeout: o.Timeout, MaxOutage: o.MaxOutage}
		if o.Progress != nil && clock != VirtualClock {
			fmt.Fprintf(o.Progress, "verify: %d real-time trials on the %s clock\n", len(idx), clock)
		}
		jrs, err := r.Execute(ctx, jobs)
		var slow []int
		for k, jr := range jrs {
			results[idx[k]] = judge(trials[idx[k]], jr, o.Limit, res, inject)
			if results[idx[k]].slow {
				slow = append(slow, k)
			}
		}
		if err != nil || len(slow) == 0 {
			return err
		}
		// a virtual trial that took longer than half a window of real time
		// may have seen keys expire (TTLs run on the real clock): run those
		// again one at a time, on fresh keys; if still slow they stay unjudged
		r.Parallel = 1
		again := make([]Job, len(slow))
		for n, k := range slow {
			again[n] = jobs[k]
			again[n].Prefix = fmt.Sprintf("%sretry:%d:", o.Prefix, idx[k])
		}
		jrs, err = r.Execute(ctx, again)
		for n, jr := range jrs {
			i := idx[slow[n]]
			results[i] = judge(trials[i], jr, o.Limit, res, inject)
		}
		return err
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "verify: %s, limit %s: %d virtual-time trials, %d real-time trials\n", lim.Name(), o.Limit, len(virtual), len(real))
	}
	realClock := RedisClock
	if inject || !keys {
		realClock = ClientClock
	}
	var verr error
	if keys {
		// the two batches use distinct keys: run them at once
		errs := make(chan error, 1)
		go func() { errs <- runBatch(real, realClock) }()
		verr = runBatch(virtual, VirtualClock)
		if rerr := <-errs; verr == nil {
			verr = rerr
		}
	} else {
		// one limit for everything (an HTTP endpoint): trials one at a time,
		// each after a window of silence, so no trial sees another's traffic
		for _, i := range sequentialSubset(trials, real) {
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "verify: %s / %s\n", trials[i].Family, trials[i].Name)
			}
			select {
			case <-ctx.Done():
			case <-time.After(W):
			}
			if verr = runBatch([]int{i}, realClock); verr != nil {
				break
			}
		}
	}
	if verr != nil {
		return nil, verr
	}

	// per family
	slowTrials := 0
	for _, fam := range scenarios.Families {
		fr := measure.FamilyResult{Family: fam, Verdict: measure.Holds}
		for i, t := range trials {
			if t.Family != fam || results[i] == nil {
				continue
			}
			tr := results[i]
			fr.Trials++
			if tr.slow {
				slowTrials++
				fr.Note = "some trials ran slower than half a window of real time and were not judged"
			}
			fr.Mode = tr.mode
			rep.Decisions += tr.decisions
			rep.Errors += tr.errors
			for _, e := range tr.errorSamples {
				if len(rep.ErrorSamples) < 5 {
					rep.ErrorSamples = append(rep.ErrorSamples, e)
				}
			}
			if t.Judge == scenarios.Liveness && (fr.MinFidelity == 0 || tr.fidelity < fr.MinFidelity) {
				fr.MinFidelity = tr.fidelity
			}
			fr.MaxRatio = max(fr.MaxRatio, tr.ratio)
			if tr.failure != nil && fr.Verdict == measure.Holds {
				fr.Verdict = tr.failure.Kind
				if fam == "skew" && o.Skew == 0 {
					fr.Verdict = measure.Holds
					fr.Note = "sensitivity only (pass --skew to make it part of the verdict)"
					continue
				}
				if rep.CounterExample == nil || rank(tr.failure.Kind) < rank(rep.CounterExample.Kind) ||
					(tr.failure.Kind == rep.CounterExample.Kind && tr.failure.Accepted > rep.CounterExample.Accepted) {
					rep.CounterExample = tr.failure
					rep.Verdict = tr.failure.Kind
				}
			}
		}
		switch {
		case fr.Trials > 0:
		case fam == "skew" && !inject:
			fr.Verdict, fr.Note = measure.Skipped, "the target reads its own clock: client skew does not apply"
		case fam == "weighted" && !cost:
			fr.Verdict, fr.Note = measure.Skipped, "the target takes no cost (no {cost} argument)"
		case fam == "isolation" && !keys:
			fr.Verdict, fr.Note = measure.Skipped, "the target takes no key"
		case !realOK:
			fr.Verdict, fr.Note = measure.Skipped, fmt.Sprintf("real-time family skipped: window %s is longer than %s", W, o.RealTimeMax)
		default:
			fr.Verdict = measure.Skipped
		}
		if fam == "skew" && fr.Trials > 0 {
			rep.SkewDeltaMS = float64(probe.Microseconds()) / 1000
			rep.SkewSensitivity = fr.MaxRatio
			if o.Skew == 0 && fr.Note == "" {
				fr.Note = "sensitivity only (pass --skew to make it part of the verdict)"
			}
		}
		rep.Families = append(rep.Families, fr)
	}
	judged := 0
	for _, f := range rep.Families {
		judged += f.Trials
	}
	if rep.Verdict == measure.Holds && (judged == 0 || slowTrials == judged) {
		rep.Verdict = measure.Inconclusive
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	return rep, nil
}

// sequentialSubset picks the trials a key-less target runs one after
// another: a few of each family (the overload liveness trial also judges
// safety, so the separate safety run is left out).
func sequentialSubset(trials []scenarios.Trial, idx []int) []int {
	quota := map[string]int{"boundary": 2, "phases": 4, "same-instant": 1, "concurrent": 1, "idle-gaps": 3}
	var out []int
	for _, i := range idx {
		t := trials[i]
		if t.Family == "overload" && t.Judge == scenarios.Liveness {
			out = append(out, i)
			continue
		}
		if quota[t.Family] > 0 {
			quota[t.Family]--
			out = append(out, i)
		}
	}
	return out
}

func rank(kind measure.Verdict) int {
	switch kind {
	case measure.Violated:
		return 0
	case measure.Starved:
		return 1
	}
	return 2
}

type trialResult struct {
	mode string
	// slow: a virtual trial that took half a window or more of real time;
	// its failures are not trusted (keys may have expired on the real clock)
	slow         bool
	decisions    int64
	errors       int64
	errorSamples []string
	ratio        float64
	fidelity     float64
	failure      *measure.CounterExample
}

// timed is an accepted or offered decision with its time bounds relative to
// the anchor: [lo, hi] (lo == hi when the time is the limiter's own).
type timed struct {
	lo, hi time.Duration
	cost   int64
	key    string
	client int
	ok     bool
}

// judge applies a trial's property to what Execute measured.
func judge(t scenarios.Trial, jr JobResult, l algorithms.Limit, res time.Duration, exact bool) *trialResult {
	tr := &trialResult{mode: "virtual"}
	if t.RealTime || !exact {
		tr.mode = "real"
	}
	// judge at the target's resolution: never count a set that a coarser
	// clock could have seen spanning a whole window
	w := l.Window
	if res > time.Microsecond {
		w -= res
	}
	if tr.mode == "virtual" && len(jr.Outcomes) > 0 {
		first, last := jr.Outcomes[0].Sent, jr.Outcomes[0].Recv
		for _, o := range jr.Outcomes {
			first, last = minTime(first, o.Sent), maxTime(last, o.Recv)
		}
		tr.slow = last.Sub(first) >= l.Window/2
	}
	var all []timed
	for _, o := range jr.Outcomes {
		tr.decisions++
		if o.Err != nil {
			tr.errors++
			if len(tr.errorSamples) < 2 {
				tr.errorSamples = append(tr.errorSamples, o.Err.Error())
			}
			continue
		}
		var x timed
		if tr.mode == "virtual" {
			// the true time; equals the limiter's when no skew is simulated
			x.lo = o.Arrival.At
			x.hi = x.lo
		} else if exact && len(t.Skew) == 0 {
			x.lo = o.Decision.DecidedAt.Sub(jr.Anchor)
			x.hi = x.lo
		} else {
			x.lo = o.Sent.Sub(jr.Anchor)
			x.hi = o.Recv.Sub(jr.Anchor)
		}
		x.cost, x.key, x.client, x.ok = o.Arrival.Cost, o.Arrival.Key, o.Arrival.Client, o.Decision.Allowed
		all = append(all, x)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].lo < all[b].lo })
	if t.Judge == scenarios.Safety || t.Judge == scenarios.Liveness {
		byKey := map[string][]timed{}
		for _, x := range all {
			if x.ok {
				byKey[x.key] = append(byKey[x.key], x)
			}
		}
		for _, acc := range byKey {
			sum, lo, hi, set := maxConservative(acc, w)
			tr.ratio = max(tr.ratio, float64(sum)/float64(l.Limit))
			if sum > l.Limit && tr.failure == nil {
				tr.failure = &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Violated,
					Accepted: sum, Limit: l.Limit, StartUS: lo.Microseconds(), EndUS: hi.Microseconds(),
					Decisions: evidence(set, tr.mode == "real"),
					Explain: fmt.Sprintf("%d accepted within %s (less than the window %s): %.2fx the limit of %d",
						sum, (hi - lo).String(), l.Window, float64(sum)/float64(l.Limit), l.Limit)}
			}
		}
	}
	switch t.Judge {
	case scenarios.Liveness:
		var offered []measure.Event
		var accepted int64
		for _, x := range all {
			offered = append(offered, measure.Event{At: x.lo, Cost: x.cost})
			if x.ok {
				accepted += x.cost
			}
		}
		ideal := measure.Ideal(offered, l.Limit, l.Window)
		tr.fidelity = 1
		if ideal > 0 {
			tr.fidelity = float64(accepted) / float64(ideal)
		}
		if tr.fidelity < 0.9 && tr.failure == nil {
			tr.failure = &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Starved,
				Accepted: accepted, Limit: l.Limit, Ideal: ideal, Fidelity: tr.fidelity,
				Explain: fmt.Sprintf("accepted %d where an exact sliding-window log accepts %d (%.2f): legitimate traffic is starved",
					accepted, ideal, tr.fidelity)}
		}
	case scenarios.Isolation:
		var denied []timed
		var offered int64
		for _, x := range all {
			if x.key == scenarios.IsolationKey {
				offered += x.cost
				if !x.ok {
					denied = append(denied, x)
				}
			}
		}
		if len(denied) > 0 {
			tr.failure = &measure.CounterExample{Family: t.Family, Trial: t.Name, Kind: measure.Interfered,
				Limit: l.Limit, Decisions: evidence(denied, tr.mode == "real"),
				Explain: fmt.Sprintf("%d of %d requests on a fresh key were denied after traffic on another key", len(denied), offered)}
		}
	}
	if tr.slow {
		tr.failure = nil
	}
	return tr
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// maxConservative returns the largest accepted cost of a set of decisions
// that certainly fit in one window: sorted by lo, the set starting at
// decision i holds every later decision whose hi is < lo_i + w. With exact
// times (lo == hi) this is max_in_window on (t-w, t].
func maxConservative(acc []timed, w time.Duration) (best int64, lo, hi time.Duration, set []timed) {
	bestI := -1
	for i := range acc {
		var sum int64
		var top time.Duration
		for k := i; k < len(acc) && acc[k].lo < acc[i].lo+w; k++ {
			if acc[k].hi < acc[i].lo+w {
				sum += acc[k].cost
				top = max(top, acc[k].hi)
			}
		}
		if sum > best {
			best, lo, hi, bestI = sum, acc[i].lo, top, i
		}
	}
	if bestI >= 0 {
		for k := bestI; k < len(acc) && acc[k].lo < lo+w; k++ {
			if acc[k].hi < lo+w {
				set = append(set, acc[k])
			}
		}
	}
	return best, lo, hi, set
}

func evidence(set []timed, real bool) []measure.Evidence {
	out := make([]measure.Evidence, 0, min(len(set), 200))
	for _, x := range set {
		if len(out) == 200 {
			break
		}
		e := measure.Evidence{Key: x.key, Cost: x.cost, AtUS: x.lo.Microseconds(), Client: x.client}
		if real {
			e.RecvUS = x.hi.Microseconds()
		}
		out = append(out, e)
	}
	return out
}

// IsScriptError reports whether err came from Redis running a script
// (compile or runtime error) rather than from the network.
func IsScriptError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), "script")
}
