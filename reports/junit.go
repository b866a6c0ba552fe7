package reports

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/ratelab/ratelab/measure"
)

// Verified is one target's verification as the CI formats (WriteJUnit,
// WriteAnnotations, WriteStepSummary) show it: the report, and the file the
// target came from, for a CI tool to point at.
type Verified struct {
	// Report is the target's report; never nil.
	Report *measure.VerifyReport
	// Name is the target's name where the user named it (a target file's
	// name field); "" means Report.Target, the limiter's own name.
	Name string
	// File is the path of the target file (--config) or script (--script)
	// the target came from, as the user gave it; "" for a built-in
	// algorithm or an HTTP endpoint.
	File string
}

// JUnitSuiteName is the name of the one testsuite a command writes.
const JUnitSuiteName = "ratelab verify"

// WriteJUnit writes vs as a JUnit XML report (the Ant/Jenkins form GitLab,
// Jenkins, CircleCI and the GitHub test reporters read): one testsuite for
// the command, one testcase per target x limit x family (classname the
// target, name "family (limit)"; with several limits, each limit's own
// families, judged against it alone), and for a report that tells its
// verdict in two parts, "safety (limits)" and "liveness (limits)". A family that failed (violated, starved,
// interfered) is a <failure> whose message is one line and whose text is
// the report as `ratelab verify` prints it, the counter-example included;
// a skipped family is <skipped> with the reason; a verification that
// stopped early or is inconclusive adds a testcase "verdict" with an
// <error>. Times are seconds. Errors are w's.
func WriteJUnit(w io.Writer, vs []Verified) error {
	suite := junit.Testsuite{Name: JUnitSuiteName, Time: "0"}
	var total time.Duration
	for i, v := range vs {
		r := v.Report
		if i == 0 && !r.StartedAt.IsZero() {
			// no zone: the form the strictest schemas (Jenkins', Ant's) accept
			suite.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
		}
		total += time.Duration(r.DurationMS) * time.Millisecond
		for _, tc := range testcases(v) {
			suite.AddTestcase(tc)
		}
	}
	suite.Time = seconds(total)
	if len(vs) > 0 && vs[0].Report.ToolVersion != "" {
		suite.AddProperty("tool_version", vs[0].Report.ToolVersion)
	}
	out := junit.Testsuites{Name: JUnitSuiteName, Time: suite.Time}
	out.AddSuite(suite)
	if _, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"); err != nil {
		return err
	}
	return out.WriteXML(w)
}

// testcases are v's testcases: one per family, and "verdict" when the
// report has no verdict on the limiter.
func testcases(v Verified) []junit.Testcase {
	r := v.Report
	var text strings.Builder
	_ = writeVerifyTable(&text, r, true) // a strings.Builder does not fail
	body := xmlText(text.String())
	limits := r.LimitDesc
	if len(r.Limits) > 0 {
		limits = strings.Join(r.Limits, ", ")
	}
	class := v.target()
	var out []junit.Testcase
	sets := []measure.LimitResult{{Limit: limits, Families: r.Families, CounterExample: r.CounterExample}}
	if len(r.PerLimit) > 0 {
		sets = r.PerLimit
	}
	for _, set := range sets {
		for _, f := range set.Families {
			tc := junit.Testcase{Name: fmt.Sprintf("%s (%s)", f.Family, set.Limit), Classname: class, Time: "0"}
			switch f.Verdict {
			case measure.Holds:
			case measure.Skipped:
				tc.Skipped = &junit.Result{Message: xmlText(f.Note)}
			case measure.Violated, measure.Starved, measure.Interfered:
				tc.Failure = &junit.Result{Type: string(f.Verdict), Message: xmlText(failureLine(class, set.CounterExample, f)), Data: body}
			default: // inconclusive
				tc.Error = &junit.Result{Type: string(f.Verdict), Message: xmlText(strOr(f.Note, string(f.Verdict))), Data: body}
			}
			out = append(out, tc)
		}
	}
	out = append(out, partCases(r, class, limits, body)...)
	if r.Verdict == measure.Inconclusive || !r.Complete {
		msg := r.Error
		if msg == "" {
			msg = r.Reason()
		}
		out = append(out, junit.Testcase{Name: fmt.Sprintf("verdict (%s)", limits), Classname: class, Time: "0",
			Error: &junit.Result{Type: strOr(string(r.Verdict), "incomplete"), Message: xmlText(strOr(msg, "stopped before a verdict")), Data: body}})
	}
	return out
}

// partCases are the testcases "safety (limits)" and "liveness (limits)"
// of a report that tells its two parts (none for one that does not): a
// part that failed is a <failure> (liveness only when it is part of the
// verdict; a starvation reported only says so in its system-out), one
// not judged <skipped>, one without a verdict an <error>.
func partCases(r *measure.VerifyReport, class, limits, body string) []junit.Testcase {
	if r.Safety == nil || r.Liveness == nil {
		return nil
	}
	line := PartsLine(r)
	safety := junit.Testcase{Name: fmt.Sprintf("safety (%s)", limits), Classname: class, Time: "0"}
	switch v := r.Safety.Verdict; v {
	case measure.Violated:
		safety.Failure = &junit.Result{Type: string(v), Message: xmlText(fmt.Sprintf("%s: %s", class, line)), Data: body}
	case measure.Inconclusive:
		safety.Error = &junit.Result{Type: string(v), Message: xmlText(fmt.Sprintf("%s: %s", class, line)), Data: body}
	}
	live := junit.Testcase{Name: fmt.Sprintf("liveness (%s)", limits), Classname: class, Time: "0"}
	switch v := r.Liveness.Verdict; {
	case v == measure.Skipped:
		live.Skipped = &junit.Result{Message: "no overload trial ran"}
	case v == measure.Inconclusive:
		live.Error = &junit.Result{Type: string(v), Message: xmlText(fmt.Sprintf("%s: %s", class, line)), Data: body}
	case v != measure.Holds && r.Liveness.Gated:
		live.Failure = &junit.Result{Type: string(v), Message: xmlText(fmt.Sprintf("%s: %s", class, line)), Data: body}
	case v != measure.Holds:
		live.SystemOut = &junit.Output{Data: xmlText(line)}
	}
	return []junit.Testcase{safety, live}
}

// failureLine is the one-line message of family f's failure: the
// counter-example's sentence when it is f's (c, nil when none), else f's
// worst ratio.
func failureLine(name string, c *measure.CounterExample, f measure.FamilyResult) string {
	if c != nil && c.Family == f.Family {
		return fmt.Sprintf("%s %s: %s", name, c.Kind, c.Explain)
	}
	if f.Verdict == measure.Violated {
		return fmt.Sprintf("%s violated: %.2fx the limit in one window (family %s)", name, f.MaxRatio, f.Family)
	}
	return fmt.Sprintf("%s %s (family %s)", name, f.Verdict, f.Family)
}

// target is v's name: Name, else the report's target.
func (v Verified) target() string {
	return strOr(v.Name, strOr(v.Report.Target, "target"))
}

// seconds renders d as JUnit's time: seconds, three decimals.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func strOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// xmlText drops the characters XML 1.0 cannot hold (control characters
// other than tab, newline and carriage return; U+FFFE, U+FFFF), which
// encoding/xml would otherwise write and a CI tool's parser refuse.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF:
			return -1
		}
		return r
	}, s)
}
