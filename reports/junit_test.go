package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// validateJUnit checks doc against testdata/junit.xsd with xmllint
// (libxml2-utils; make test installs it), and returns xmllint's complaint.
func validateJUnit(t *testing.T, doc []byte) error {
	t.Helper()
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("the JUnit schema test needs xmllint (Debian: apt-get install libxml2-utils; make test installs it): %v", err)
	}
	f := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(f, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), f).CombinedOutput()
	if err != nil {
		return &xmllintError{string(out)}
	}
	return nil
}

type xmllintError struct{ out string }

func (e *xmllintError) Error() string { return "xmllint: " + e.out }

func junitOf(t *testing.T, vs ...Verified) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, vs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestJUnitValidatesAgainstSchema(t *testing.T) {
	holds, violated := reportstest.Verify(false), reportstest.Verify(true)
	holds.StartedAt = time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	incomplete := reportstest.Verify(false)
	incomplete.Complete, incomplete.Verdict, incomplete.Error = false, measure.Inconclusive, "redis: connection refused"
	nasty := reportstest.Verify(true)
	// characters XML 1.0 cannot hold, a CDATA end and markup in a key and a note
	nasty.Target = "a<b>&\"c\x01"
	nasty.CounterExample.Explain = "]]> \x07bell <failure/>"
	nasty.CounterExample.Decisions[0].Key = "k]]>\x1b[31m"
	for _, c := range []struct {
		name string
		vs   []Verified
	}{
		{"holds", []Verified{{Report: holds}}},
		{"violated", []Verified{{Report: violated, File: "ratelab.yaml"}}},
		{"suite of three", []Verified{{Report: holds}, {Report: violated}, {Report: incomplete}}},
		{"incomplete", []Verified{{Report: incomplete}}},
		{"characters to escape", []Verified{{Report: nasty}}},
		{"no target", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := junitOf(t, c.vs...)
			if err := validateJUnit(t, doc); err != nil {
				t.Errorf("%v\n%s", err, doc)
			}
		})
	}
	// the schema check can fail: a testcase without a name, two results in one
	for _, bad := range []string{
		`<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase classname="c"/></testsuite></testsuites>`,
		`<testsuites><testsuite name="s" tests="1" failures="1" errors="0"><testcase name="n" classname="c"><failure/><skipped/></testcase></testsuite></testsuites>`,
		`<testsuites><testsuite name="s" tests="1" failures="0" errors="0" timestamp="2026-11-24T22:00:00Z"/></testsuites>`,
	} {
		if err := validateJUnit(t, []byte(bad)); err == nil {
			t.Errorf("the schema took an invalid document: %s", bad)
		}
	}
}

// TestJUnitReadBack reads the report as a CI tool does: the counts, the
// testcases, the failure's text.
func TestJUnitReadBack(t *testing.T) {
	holds, violated := reportstest.Verify(false), reportstest.Verify(true)
	violated.Target = "window-counter.lua"
	doc := junitOf(t, Verified{Report: holds}, Verified{Report: violated})
	var got junit.Testsuites
	if err := xml.Unmarshal(doc, &got); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if len(got.Suites) != 1 {
		t.Fatalf("%d testsuites, want one per command", len(got.Suites))
	}
	s := got.Suites[0]
	wantCases := len(holds.Families) + len(violated.Families)
	if s.Tests != wantCases || len(s.Testcases) != wantCases || s.Failures != 1 || s.Skipped != 2 || s.Errors != 0 {
		t.Errorf("tests %d (%d testcases), failures %d, skipped %d, errors %d; want %d, %d, 1, 2, 0",
			s.Tests, len(s.Testcases), s.Failures, s.Skipped, s.Errors, wantCases, wantCases)
	}
	var failed []junit.Testcase
	for _, tc := range s.Testcases {
		if tc.Failure != nil {
			failed = append(failed, tc)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("%d failed testcases, want 1", len(failed))
	}
	f := failed[0]
	if f.Classname != "window-counter.lua" || f.Name != "boundary (50 per 2s)" {
		t.Errorf("failed testcase %q of %q, want boundary (50 per 2s) of window-counter.lua", f.Name, f.Classname)
	}
	ce := violated.CounterExample
	if !strings.Contains(f.Failure.Message, ce.Explain) {
		t.Errorf("failure message %q lacks the counter-example's sentence %q", f.Failure.Message, ce.Explain)
	}
	for _, want := range []string{"COUNTER-EXAMPLE (VIOLATED)", "window: -7 µs to +6 µs", "14 requests, every one accepted in the window", "+6 µs  user  cost 1"} {
		if !strings.Contains(f.Failure.Data, want) {
			t.Errorf("failure text lacks %q:\n%s", want, f.Failure.Data)
		}
	}
}

func TestAnnotationEscaping(t *testing.T) {
	for _, c := range []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"100% sure", "100%25 sure", "100%25 sure"},
		{"two\nlines\r\n", "two%0Alines%0D%0A", "two%0Alines%0D%0A"},
		{"a: b, c", "a: b, c", "a%3A b%2C c"},
		{"%0A literal", "%250A literal", "%250A literal"},
		{"::error::x", "::error::x", "%3A%3Aerror%3A%3Ax"},
	} {
		if got := escapeData(c.in); got != c.data {
			t.Errorf("escapeData(%q) = %q, want %q", c.in, got, c.data)
		}
		if got := escapeProperty(c.in); got != c.prop {
			t.Errorf("escapeProperty(%q) = %q, want %q", c.in, got, c.prop)
		}
	}
}

func TestAnnotations(t *testing.T) {
	holds, violated := reportstest.Verify(false), reportstest.Verify(true)
	violated.Target = "limiter.lua"
	incomplete := reportstest.Verify(false)
	incomplete.Complete, incomplete.Verdict, incomplete.Error = false, measure.Inconclusive, "redis: EOF"
	var b bytes.Buffer
	if err := WriteAnnotations(&b, []Verified{{Report: holds}, {Report: violated, File: "ci/ratelab.yaml"}, {Report: incomplete}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d annotations, want 2 (none for a target that holds):\n%s", len(lines), b.String())
	}
	want0 := "::error file=ci/ratelab.yaml,title=ratelab verify%3A limiter.lua violated (50 per 2s)::14 accepted within 13µs (less than the window 2s)%3A"
	if !strings.HasPrefix(lines[0], "::error file=ci/ratelab.yaml,title=ratelab verify%3A limiter.lua violated (50 per 2s)::") ||
		!strings.Contains(lines[0], "%0Awindow -7 µs to +6 µs") {
		t.Errorf("annotation\n%s\nwant it to start %s... and hold the window on a second line", lines[0], want0)
	}
	if !strings.HasPrefix(lines[1], "::warning title=") || !strings.HasSuffix(lines[1], "::redis: EOF") {
		t.Errorf("annotation of an incomplete run: %s", lines[1])
	}
}

func TestStepSummaryGolden(t *testing.T) {
	holds, violated := reportstest.Verify(false), reportstest.Verify(true)
	violated.Target = "limiter|v2.lua"
	var b bytes.Buffer
	if err := WriteStepSummary(&b, []Verified{{Report: holds}, {Report: violated}}); err != nil {
		t.Fatal(err)
	}
	golden(t, "step-summary.md.golden", b.Bytes())
}
