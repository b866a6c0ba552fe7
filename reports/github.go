package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelab/ratelab/measure"
)

// WriteAnnotations writes one GitHub Actions workflow command per target
// that did not hold, for the runner to show on the run's page (and on the
// target's file when it has one): "::error" for a failed verification
// (violated, starved, interfered), "::warning" for an inconclusive or
// unfinished one. Nothing for a target that holds. Values are escaped as
// the runner unescapes them (escapeData, escapeProperty). Errors are w's.
func WriteAnnotations(w io.Writer, vs []Verified) error {
	var b strings.Builder
	for _, v := range vs {
		r := v.Report
		level := ""
		switch {
		case r.Verdict == measure.Holds && r.Complete:
			continue
		case r.Verdict == measure.Violated, r.Verdict == measure.Starved, r.Verdict == measure.Interfered:
			level = "error"
		default:
			level = "warning"
		}
		props := []string{"title=" + escapeProperty(fmt.Sprintf("ratelab verify: %s %s (%s)", v.target(), strOr(string(r.Verdict), "incomplete"), r.LimitDesc))}
		if v.File != "" {
			props = append([]string{"file=" + escapeProperty(v.File)}, props...)
		}
		fmt.Fprintf(&b, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(annotationText(r)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// annotationText is what an annotation says: the counter-example's
// sentence and its window, or why there is no verdict.
func annotationText(r *measure.VerifyReport) string {
	if c := r.CounterExample; c != nil {
		s := fmt.Sprintf("%s (family %s, trial %q)", c.Explain, c.Family, c.Trial)
		if c.Kind == measure.Violated {
			o := c.Origin()
			at := newTimeScale(c.StartUS-o, c.EndUS-o)
			s += fmt.Sprintf("\nwindow %s to %s from %s, %d accepted for a limit of %d", at.format(c.StartUS-o), at.format(c.EndUS-o), TimesFrom(c), c.Accepted, c.Limit)
		}
		return s
	}
	if r.Error != "" {
		return r.Error
	}
	if reason := r.Reason(); reason != "" {
		return reason
	}
	return string(r.Verdict)
}

// escapeData escapes an annotation's message as the Actions runner
// unescapes it: % first, then CR and LF.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes an annotation's property value (title, file):
// escapeData's, and the ':' and ',' that end a value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// WriteStepSummary writes vs as the Markdown of a GitHub job summary
// ($GITHUB_STEP_SUMMARY): a table of the targets and their verdicts, then
// each failure's report (the counter-example) in a collapsed block.
// Errors are w's.
func WriteStepSummary(w io.Writer, vs []Verified) error {
	var b strings.Builder
	failed := 0
	for _, v := range vs {
		if v.Report.Verdict != measure.Holds || !v.Report.Complete {
			failed++
		}
	}
	fmt.Fprintf(&b, "### ratelab verify: %d of %d targets hold\n\n", len(vs)-failed, len(vs))
	b.WriteString("| target | limit | verdict | families | decisions | evidence |\n|---|---|---|---|---|---|\n")
	for _, v := range vs {
		r := v.Report
		fams := make([]string, 0, len(r.Families))
		for _, f := range r.Families {
			if f.Verdict != measure.Skipped {
				fams = append(fams, fmt.Sprintf("%s %s", f.Family, f.Verdict))
			}
		}
		verdict := strOr(string(r.Verdict), "incomplete")
		if r.Verdict == measure.Holds && r.Complete {
			verdict = "✅ holds"
		} else {
			verdict = "❌ " + verdict
		}
		evidence := ""
		if r.Verdict != measure.Holds || !r.Complete {
			evidence = annotationText(r)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", cell(v.target()), cell(r.LimitDesc), verdict,
			cell(strings.Join(fams, ", ")), r.Decisions, cell(evidence))
	}
	for _, v := range vs {
		r := v.Report
		if r.Verdict == measure.Holds && r.Complete {
			continue
		}
		var text strings.Builder
		_ = writeVerifyTable(&text, r, true) // a strings.Builder does not fail
		fmt.Fprintf(&b, "\n<details><summary>%s: %s</summary>\n\n```text\n%s```\n\n</details>\n",
			htmlEscaper.Replace(v.target()), strOr(string(r.Verdict), "incomplete"), strings.ReplaceAll(text.String(), "```", "'''"))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// cell makes s one Markdown table cell: no line breaks, pipes escaped.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", "<br>")
	return escapeMarkdown(s)
}
