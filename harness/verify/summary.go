package verify

import (
	"fmt"
	"strings"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// sensitivityNote marks the skew family when Skew is not part of the verdict.
const sensitivityNote = "sensitivity only (pass --skew to make it part of the verdict)"

// summarize builds the report from the judged trials: one FamilyResult per
// family in scenarios.Families order (a trial run on both clocks counts
// once, with both judgements), the totals, the counter-example and the
// verdict. The Header's end (duration, complete) is left to the caller.
func (s *study) summarize(p plan, res results) *measure.VerifyReport {
	rep := &measure.VerifyReport{Header: s.header, Target: s.lim.Name(), LimitDesc: s.lim.Describe(), Limit: s.limit.Count,
		WindowMS: s.limit.Window.Milliseconds(), Verdict: measure.Holds, Clock: s.clockName(p)}
	if len(s.limits) > 1 {
		for _, l := range s.limits {
			rep.Limits = append(rep.Limits, l.String())
		}
	}
	if len(s.absolute) > 0 {
		found := make([]string, len(s.absolute))
		for i, a := range s.absolute {
			found[i] = a.String()
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("absolute key expiries (%s) compare the virtual clock with Redis's real one: not emulated in virtual time", strings.Join(found, "; ")))
	}
	slow, judged, skipped := s.tallyFamilies(rep, p, res, nil, &s.chosen)
	for i, t := range p.trials {
		for _, tr := range []*trialResult{res.virtual[i], res.real[i]} {
			if tr != nil && t.Judge == scenarios.Liveness {
				s.livenessTrials++
				if c := tr.starved; c != nil && (s.starved == nil || c.Fidelity < s.starved.Fidelity) {
					s.starved = c
				}
			}
		}
	}
	if len(s.limits) > 1 {
		s.perLimit = make([]*trialResult, len(s.limits))
		for k, l := range s.limits {
			lr := &measure.VerifyReport{Verdict: measure.Holds}
			s.tallyFamilies(lr, p, res, func(t scenarios.Trial, tr *trialResult) (scenarios.Trial, *trialResult) {
				return s.viewFor(t, tr, k)
			}, &s.perLimit[k])
			rep.PerLimit = append(rep.PerLimit, measure.LimitResult{Limit: l.String(), Count: l.Count, WindowMS: l.Window.Milliseconds(),
				Verdict: lr.Verdict, MaxRatio: gatedRatio(lr.Families, s.cfg.Skew > 0), Families: lr.Families, CounterExample: lr.CounterExample})
		}
	}
	if skipped > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("bursts thinned: %d requests of bursts denied %d times in a row were not sent (%d decisions made); "+
			"a fault that needs more denials in a row than that is not reached within a burst", skipped, harness.ThinAfter, rep.Decisions))
	}
	if rep.Verdict == measure.Holds && (judged == 0 || slow == judged) {
		rep.Verdict = measure.Inconclusive
	}
	if rep.Errors > 0 {
		// a failed call is no answer: what it would have done is unknown,
		// so neither "holds" nor a failure found beside it is a verdict
		rep.Verdict = measure.Inconclusive
		note := rep.Reason() + ": errors are not a verdict (fix them and verify again)"
		if rep.CounterExample != nil {
			note += fmt.Sprintf("; the answered calls alone show the counter-example below (%s)", rep.CounterExample.Kind)
		}
		rep.Notes = append(rep.Notes, note)
	}
	return rep
}

// tallyFamilies adds every judged trial of p (res) to rep, family by
// family in scenarios.Families order (a trial run on both clocks counts
// once, with both judgements): rep's families, totals, counter-example
// and verdict, the judgement of the counter-example in *chosen. view,
// when not nil, is what each trial and judgement are taken as (a limit's
// own view of them: viewFor). It returns how many judgements were too
// slow, how many trials were judged, and the requests of thinned bursts
// not sent.
func (s *study) tallyFamilies(rep *measure.VerifyReport, p plan, res results,
	view func(scenarios.Trial, *trialResult) (scenarios.Trial, *trialResult), chosen **trialResult) (slow, judged int, skipped int64) {
	for _, fam := range scenarios.Families {
		fr := measure.FamilyResult{Family: fam, Verdict: measure.Holds}
		modes := map[string]bool{}
		for i, t := range p.trials {
			if t.Family != fam {
				continue
			}
			counted := false
			for _, tr := range []*trialResult{res.virtual[i], res.real[i]} {
				if tr == nil {
					continue
				}
				modes[tr.mode] = true
				skipped += tr.skipped
				vt, vtr := t, tr
				if view != nil {
					vt, vtr = view(t, tr)
				}
				if s.addTrial(rep, &fr, vt, vtr, !counted, chosen) {
					slow++
				}
				counted = true
			}
		}
		switch {
		case modes["virtual"] && modes["real"]:
			fr.Mode = "virtual+real"
		case modes["virtual"]:
			fr.Mode = "virtual"
		case modes["real"]:
			fr.Mode = "real"
		}
		if fr.Trials == 0 {
			fr.Verdict, fr.Note = measure.Skipped, s.skipNote(fam, p)
		}
		if fam == "skew" && fr.Trials > 0 {
			rep.SkewDeltaMS = float64(s.cfg.skewDelta().Microseconds()) / 1000
			rep.SkewSensitivity = fr.MaxRatio
			if s.cfg.Skew == 0 && fr.Note == "" {
				fr.Note = sensitivityNote
			}
		}
		judged += fr.Trials
		rep.Families = append(rep.Families, fr)
	}
	return slow, judged, skipped
}

// ownLimit is the index in the study's limits of the limit trial t was
// built for (its liveness and isolation are judged against it); -1 when
// none matches.
func (s *study) ownLimit(t scenarios.Trial) int {
	for k, l := range s.limits {
		if l.Count == t.Schedule.Params.Limit && l.Window == t.Schedule.Params.Window {
			return k
		}
	}
	return -1
}

// viewFor is trial t and its judgement tr as limit k sees them: its ratio
// and violation on limit k alone; its starvation or interference only
// when t was built for limit k (else t counts as a safety trial).
func (s *study) viewFor(t scenarios.Trial, tr *trialResult, k int) (scenarios.Trial, *trialResult) {
	v := *tr
	v.ratio, v.failure, v.src = 0, nil, nil
	if k < len(tr.byLimit) {
		v.ratio, v.failure, v.src = tr.byLimit[k].ratio, tr.byLimit[k].failure, tr.byLimit[k].src
	}
	switch {
	case s.ownLimit(t) != k:
		if t.Judge == scenarios.Liveness {
			t.Judge = scenarios.Safety
		}
	case v.failure != nil:
	case tr.starved != nil:
		v.failure, v.src = tr.starved, tr.starvedSrc
	case tr.failure != nil && tr.failure.Kind == measure.Interfered:
		v.failure, v.src = tr.failure, tr.src
	}
	return t, &v
}

// gatedRatio is the largest MaxRatio of families (the skew family's only
// when skewed is set: otherwise it is a sensitivity figure).
func gatedRatio(families []measure.FamilyResult, skewed bool) float64 {
	var top float64
	for _, f := range families {
		if f.Family == "skew" && !skewed {
			continue
		}
		top = max(top, f.MaxRatio)
	}
	return top
}

// clockName says how the target was driven (VerifyReport.Clock).
func (s *study) clockName(p plan) string {
	switch {
	case s.caps.InjectsTime && len(p.real) > 0:
		return "virtual+real"
	case s.caps.InjectsTime:
		return "virtual"
	case s.caps.UsesKeys:
		return "redis"
	}
	return "real"
}

// gated reports whether a failure of kind is part of the verdict: a
// violation always; starvation with MinFidelity; interference with
// CheckIsolation.
func (s *study) gated(kind measure.Verdict) bool {
	switch kind {
	case measure.Starved:
		return s.cfg.MinFidelity > 0
	case measure.Interfered:
		return s.cfg.CheckIsolation
	}
	return true
}

// ungatedNote marks a family whose failure is reported but not gated.
func ungatedNote(kind measure.Verdict) string {
	if kind == measure.Starved {
		return "reported, not part of the verdict (ask for a minimum fidelity: --min-fidelity 0.9)"
	}
	return "reported, not part of the verdict (--check-isolation makes it part)"
}

// addTrial adds trial t's judgement tr to its family fr and to the report's
// totals (first: the trial's first judgement, counted in fr.Trials); its
// failure sets the family's verdict (the first one) and, when gated,
// becomes the report's counter-example when it is the most serious so far
// (moreSerious), across every family and trial, its judgement in *chosen.
// The skew family's failures count only when Skew is set. It reports
// whether the trial was too slow to be judged.
func (s *study) addTrial(rep *measure.VerifyReport, fr *measure.FamilyResult, t scenarios.Trial, tr *trialResult, first bool, chosen **trialResult) bool {
	if first {
		fr.Trials++
	}
	if tr.slow {
		fr.Note = "some trials ran slower than half a window of real time and were not judged"
	}
	if !tr.shared { // a run judged twice is counted once
		rep.Decisions += tr.decisions
		rep.Errors += tr.errors
	}
	rep.Decisions += tr.controlDecisions
	rep.Errors += tr.controlErrors
	for _, e := range tr.errorSamples {
		if len(rep.ErrorSamples) < 5 {
			rep.ErrorSamples = append(rep.ErrorSamples, e)
		}
	}
	if t.Judge == scenarios.Liveness && (fr.MinFidelity == 0 || tr.fidelity < fr.MinFidelity) {
		fr.MinFidelity = tr.fidelity
	}
	fr.MaxRatio = max(fr.MaxRatio, tr.ratio)
	if tr.failure == nil {
		return tr.slow
	}
	if t.Family == "skew" && s.cfg.Skew == 0 {
		fr.Note = sensitivityNote
		return tr.slow
	}
	if fr.Verdict == measure.Holds {
		fr.Verdict = tr.failure.Kind
	}
	if !s.gated(tr.failure.Kind) {
		fr.Note = ungatedNote(tr.failure.Kind)
		return tr.slow
	}
	if moreSerious(tr.failure, rep.CounterExample) {
		rep.CounterExample = tr.failure
		rep.Verdict = tr.failure.Kind
		*chosen = tr
	}
	return tr.slow
}

// moreSerious reports whether failure c beats the counter-example so far
// (nil: none): violated before starved before interfered; then the worst:
// the highest accepted / limit (a violation), the lowest fidelity
// (starvation), the most denied (interference); on a tie the first found
// stays.
func moreSerious(c, so *measure.CounterExample) bool {
	switch {
	case so == nil || rank(c.Kind) < rank(so.Kind):
		return true
	case c.Kind != so.Kind:
		return false
	case c.Kind == measure.Violated:
		return c.Ratio() > so.Ratio()
	case c.Kind == measure.Starved:
		return c.Fidelity < so.Fidelity
	}
	return len(c.Decisions) > len(so.Decisions)
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

// skipNote says why family fam ran no trial.
func (s *study) skipNote(fam string, p plan) string {
	switch {
	case fam == "skew" && !s.caps.InjectsTime:
		return "the target reads its own clock: client skew does not apply"
	case (fam == scenarios.DenseFamily || fam == scenarios.GreedyFamily) && !s.caps.InjectsTime:
		return "the target reads its own clock: this family needs virtual time"
	case fam == scenarios.GreedyFamily && s.limit.Count > scenarios.GreedyMaxLimit:
		return fmt.Sprintf("limit above %d: one call per request; the dense family stands in for it", scenarios.GreedyMaxLimit)
	case adaptiveFamily(fam) && !s.caps.InjectsTime:
		return "the target reads its own clock: this family needs virtual time"
	case adaptiveFamily(fam) && s.limit.Count > scenarios.AdaptiveMaxLimit:
		return fmt.Sprintf("limit above %d: one call per request", scenarios.AdaptiveMaxLimit)
	case adaptiveFamily(fam) && s.limit.Window < scenarios.AdaptiveMinWindow:
		return fmt.Sprintf("window under %s: key TTLs of a few ms are not emulated exactly enough for it", scenarios.AdaptiveMinWindow)
	case fam == scenarios.SearchFamily && s.cfg.searchDecisions() <= 0:
		return "no search budget (--budget 0)"
	case fam == "weighted" && !s.caps.TakesCost:
		return "the target takes no cost (no {cost} argument)"
	case fam == "isolation" && !s.caps.UsesKeys:
		return "the target takes no key"
	case p.ttlSkipped && ttlFamily(fam) && s.caps.InjectsTime:
		return "the script sets absolute key expiries: not emulated in virtual time (--real-time runs it on the wall clock)"
	case !p.realOK:
		return fmt.Sprintf("real-time family skipped: window %s is longer than %s", limit.FormatWindow(s.limit.Window), limit.FormatWindow(s.cfg.RealTimeMax))
	}
	return ""
}

// parts tells rep's verdict in its two parts (VerifyReport.Safety and
// Liveness), once it is final (after shrinking): safety from the families
// that are part of the verdict and the violations; liveness from the
// worst starvation found, gated or not, its cause read from its trial
// (cause.go), and from interference when isolation is checked.
func (s *study) parts(rep *measure.VerifyReport) {
	safety := &measure.Safety{Verdict: measure.Holds, MaxRatio: gatedRatio(rep.Families, s.cfg.Skew > 0)}
	for _, f := range rep.Families {
		if f.Verdict == measure.Violated && (f.Family != "skew" || s.cfg.Skew > 0) {
			safety.Verdict = measure.Violated
		}
	}
	live := &measure.Liveness{Verdict: measure.Holds, Gated: s.cfg.MinFidelity > 0, Floor: s.cfg.livenessFloor()}
	for _, f := range rep.Families {
		if f.MinFidelity > 0 && (live.MinFidelity == 0 || f.MinFidelity < live.MinFidelity) {
			live.MinFidelity = f.MinFidelity
		}
		if f.Family == "isolation" && f.Verdict == measure.Interfered && s.cfg.CheckIsolation {
			live.Verdict, live.Gated = measure.Interfered, true
		}
	}
	switch {
	case s.starved != nil:
		live.Verdict, live.Cause, live.Detail = measure.Starved, s.starved.Cause, s.starved.CauseDetail
	case s.livenessTrials == 0 && live.Verdict == measure.Holds:
		live.Verdict = measure.Skipped
	}
	if rep.Verdict == measure.Inconclusive {
		// calls failed, a violation did not replay or nothing was judged:
		// a part without a failure is not known to hold
		if safety.Verdict == measure.Holds || rep.Unreproduced {
			safety.Verdict = measure.Inconclusive
		}
		if live.Verdict == measure.Holds {
			live.Verdict = measure.Inconclusive
		}
	}
	rep.Safety, rep.Liveness = safety, live
}
