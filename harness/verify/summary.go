package verify

import (
	"fmt"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// sensitivityNote marks the skew family when Skew is not part of the verdict.
const sensitivityNote = "sensitivity only (pass --skew to make it part of the verdict)"

// summarize builds the report from the judged trials: one FamilyResult per
// family in scenarios.Families order, the totals, the counter-example and
// the verdict. DurationMS is left to the caller.
func (s *study) summarize(p plan, results []*trialResult) *measure.VerifyReport {
	rep := &measure.VerifyReport{Target: s.lim.Name(), LimitDesc: s.lim.Describe(), Limit: s.limit.Limit,
		WindowMS: s.limit.Window.Milliseconds(), Verdict: measure.Holds, Clock: s.clockName()}
	slow := 0
	for _, fam := range scenarios.Families {
		fr := measure.FamilyResult{Family: fam, Verdict: measure.Holds}
		for i, t := range p.trials {
			if t.Family == fam && results[i] != nil {
				if s.addTrial(rep, &fr, t, results[i]) {
					slow++
				}
			}
		}
		if fr.Trials == 0 {
			fr.Verdict, fr.Note = measure.Skipped, s.skipNote(fam, p.realOK)
		}
		if fam == "skew" && fr.Trials > 0 {
			rep.SkewDeltaMS = float64(s.cfg.skewDelta().Microseconds()) / 1000
			rep.SkewSensitivity = fr.MaxRatio
			if s.cfg.Skew == 0 && fr.Note == "" {
				fr.Note = sensitivityNote
			}
		}
		rep.Families = append(rep.Families, fr)
	}
	judged := 0
	for _, f := range rep.Families {
		judged += f.Trials
	}
	if rep.Verdict == measure.Holds && (judged == 0 || slow == judged) {
		rep.Verdict = measure.Inconclusive
	}
	return rep
}

// clockName says how the target was driven (VerifyReport.Clock).
func (s *study) clockName() string {
	switch {
	case s.caps.InjectsTime:
		return "virtual+real"
	case s.caps.UsesKeys:
		return "redis"
	}
	return "real"
}

// addTrial adds trial t's judgement tr to its family fr and to the report's
// totals; its failure sets the family's verdict (the first one) and
// becomes the report's counter-example when it is the most serious so far.
// The skew family's failures count only when Skew is set. It reports
// whether the trial was too slow to be judged.
func (s *study) addTrial(rep *measure.VerifyReport, fr *measure.FamilyResult, t scenarios.Trial, tr *trialResult) bool {
	fr.Trials++
	if tr.slow {
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
	if tr.failure == nil || fr.Verdict != measure.Holds {
		return tr.slow
	}
	if t.Family == "skew" && s.cfg.Skew == 0 {
		fr.Note = sensitivityNote
		return tr.slow
	}
	fr.Verdict = tr.failure.Kind
	if moreSerious(tr.failure, rep.CounterExample) {
		rep.CounterExample = tr.failure
		rep.Verdict = tr.failure.Kind
	}
	return tr.slow
}

// moreSerious reports whether failure c beats the counter-example so far
// (nil: none): violated before starved before interfered, then the most
// accepted; on a tie the first found stays.
func moreSerious(c, so *measure.CounterExample) bool {
	return so == nil || rank(c.Kind) < rank(so.Kind) || (c.Kind == so.Kind && c.Accepted > so.Accepted)
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
func (s *study) skipNote(fam string, realOK bool) string {
	switch {
	case fam == "skew" && !s.caps.InjectsTime:
		return "the target reads its own clock: client skew does not apply"
	case fam == "weighted" && !s.caps.TakesCost:
		return "the target takes no cost (no {cost} argument)"
	case fam == "isolation" && !s.caps.UsesKeys:
		return "the target takes no key"
	case !realOK:
		return fmt.Sprintf("real-time family skipped: window %s is longer than %s", s.limit.Window, s.cfg.RealTimeMax)
	}
	return ""
}
