package ci

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

func TestWorse(t *testing.T) {
	for _, tc := range []struct {
		a, b, want measure.Verdict
	}{
		{measure.Holds, measure.Violated, measure.Violated},         // a failure over holds
		{measure.Violated, measure.Inconclusive, measure.Violated},  // a failure over inconclusive
		{measure.Holds, measure.Inconclusive, measure.Inconclusive}, // inconclusive over holds
		{measure.Starved, measure.Interfered, measure.Starved},      // a tie: the first stays
		{measure.Skipped, measure.Holds, measure.Skipped},           // skipped counts as holds
	} {
		if got := Worse(tc.a, tc.b); got != tc.want {
			t.Errorf("Worse(%s, %s): got %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSuiteOutcome(t *testing.T) {
	rep := &measure.VerifyReport{Verdict: measure.Holds}
	for _, tc := range []struct {
		name       string
		add        func(s *Suite)
		want       string
		wantFailed bool
	}{
		{"all hold", func(s *Suite) { s.Add(reports.Verified{Report: rep}, "a", false, nil) }, "", false},
		{"one failed, one broken", func(s *Suite) {
			s.Add(reports.Verified{Report: rep}, "a", true, errors.New("x"))
			s.Add(reports.Verified{Report: rep}, "b", false, errors.New("y"))
		}, "verify: 1 of 3 targets hold; failed: a; not verified: b", true},
		{"one broken", func(s *Suite) { s.Add(reports.Verified{Report: rep}, "b", false, errors.New("y")) },
			"verify: 2 of 3 targets hold; not verified: b (see above)", false},
	} {
		var s Suite
		tc.add(&s)
		got, failed := s.Outcome(3)
		if got != tc.want || failed != tc.wantFailed {
			t.Errorf("%s: got %q %v, want %q %v", tc.name, got, failed, tc.want, tc.wantFailed)
		}
	}
}

func TestWriteSuiteJSON(t *testing.T) {
	done := []reports.Verified{
		{Report: &measure.VerifyReport{Verdict: measure.Holds, Header: measure.Header{Complete: true}}},
		{Report: ErrorReport("x", []limit.Limit{{Count: 10, Window: time.Second}}, errors.New("no Redis"))},
	}
	var b bytes.Buffer
	if err := (Outputs{SuiteJSON: true}).WriteSuite(&b, done); err != nil {
		t.Fatal(err)
	}
	var got SuiteJSON
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Verdict != measure.Inconclusive || got.Complete || len(got.Targets) != 2 || got.Targets[1].Error != "no Redis" || got.Targets[1].Limit != 10 {
		t.Errorf("got %+v", got)
	}
}

func TestWriteGitHubStepSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	done := []reports.Verified{{Report: &measure.VerifyReport{Target: "sliding-log", Verdict: measure.Holds, Header: measure.Header{Complete: true}}}}
	o := Outputs{StepSummary: path}
	for range 2 { // appended, not replaced
		if err := o.WriteGitHub(nil, nil, done); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Count(string(b), "sliding-log") < 2 {
		t.Errorf("summary %q, %v: want it twice", b, err)
	}
	o.StepSummary = filepath.Join(path, "no-dir", "x")
	if err := o.WriteGitHub(nil, nil, done); err == nil || !strings.HasPrefix(err.Error(), "$GITHUB_STEP_SUMMARY: ") {
		t.Errorf("got %v, want an error naming $GITHUB_STEP_SUMMARY", err)
	}
}

func TestWriteErrorJSON(t *testing.T) {
	var w CountingWriter
	w.W = new(bytes.Buffer)
	if err := WriteErrorJSON(&w, "run", "boom", 2); err != nil {
		t.Fatal(err)
	}
	var got ErrorJSON
	if err := json.Unmarshal(w.W.(*bytes.Buffer).Bytes(), &got); err != nil || w.N == 0 {
		t.Fatalf("%v, %d bytes", err, w.N)
	}
	if got.Command != "run" || got.Error != "boom" || got.ExitCode != 2 || got.Complete || got.Tool != "ratelab" {
		t.Errorf("got %+v", got)
	}
}

func TestWriters(t *testing.T) {
	for _, c := range []struct {
		args        []string
		quiet, json bool
	}{
		{[]string{"run"}, false, false},
		{[]string{"run", "-q"}, true, false},
		{[]string{"run", "--quiet", "--quiet=false"}, false, false},
		{[]string{"run", "--quiet=true", "--format", "json"}, true, true},
		{[]string{"run", "--format=json"}, false, true},
		{[]string{"run", "--format", "table"}, false, false},
		{[]string{"run", "--", "-q", "--format=json"}, false, false},
	} {
		stdout, stderr := new(bytes.Buffer), new(bytes.Buffer)
		out, errOut := Writers(c.args, stdout, stderr)
		if quiet := errOut == io.Discard; quiet != c.quiet {
			t.Errorf("%q: quiet %v, want %v", c.args, quiet, c.quiet)
		}
		_, json := out.(*CountingWriter)
		if json != c.json {
			t.Errorf("%q: counting %v, want %v", c.args, json, c.json)
		}
		if err := WriteErrorJSONIfSilent(out, "run", "boom", 2); err != nil {
			t.Fatal(err)
		}
		if wrote := stdout.Len() > 0; wrote != c.json {
			t.Errorf("%q: error object written %v, want %v", c.args, wrote, c.json)
		}
		// once something went through, never again
		before := stdout.Len()
		if err := WriteErrorJSONIfSilent(out, "run", "boom", 2); err != nil || stdout.Len() != before {
			t.Errorf("%q: written twice (%v)", c.args, err)
		}
	}
}

// Collect prints each target's report unless stdout carries the JUnit
// report or a suite's one JSON object; Write puts that object and the
// JUnit report on stdout, the JUnit report's error through junitErr.
func TestCollect(t *testing.T) {
	t.Setenv(EnvGitHubActions, "")
	t.Setenv(EnvStepSummary, "")
	for _, tc := range []struct {
		c    Collect
		want bool
	}{
		{Collect{}, true},
		{Collect{JSON: true}, true},                 // one target: its JSON at once
		{Collect{JSON: true, Several: true}, false}, // the suite's object at the end
		{Collect{Several: true}, true},              // tables as each ends
		{Collect{JUnit: "-"}, false},                // stdout is the XML
		{Collect{JUnit: "j.xml", JSON: true}, true}, // a file: stdout free
	} {
		if got := tc.c.Prints(); got != tc.want {
			t.Errorf("%+v: Prints %v, want %v", tc.c, got, tc.want)
		}
	}
	rep := &measure.VerifyReport{Target: "sliding-log", Verdict: measure.Holds, Header: measure.Header{Complete: true}}
	c := Collect{JSON: true, Several: true}
	c.Suite.Add(reports.Verified{Report: rep, Name: "a"}, "a", false, nil)
	var out bytes.Buffer
	if err := c.Write(&out, io.Discard, nil); err != nil || !strings.Contains(out.String(), `"targets"`) {
		t.Errorf("suite JSON: %q, %v; want one object with its targets", out.String(), err)
	}
	c = Collect{JUnit: filepath.Join(t.TempDir(), "missing", "j.xml")}
	c.Suite.Add(reports.Verified{Report: rep, Name: "a"}, "a", false, nil)
	named := errors.New("named")
	if err := c.Write(io.Discard, io.Discard, func(error) error { return named }); !errors.Is(err, named) {
		t.Errorf("JUnit in a missing directory: %v, want the error through junitErr", err)
	}
	out.Reset()
	c.JUnit = "-"
	if err := c.Write(&out, io.Discard, nil); err != nil || !strings.Contains(out.String(), "<testsuites") {
		t.Errorf("JUnit on stdout: %q, %v", out.String(), err)
	}
}
