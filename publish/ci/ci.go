// Package ci writes what CI pipelines read of a verify over one or several
// targets: the JUnit XML report, the GitHub Actions annotations and job
// summary, one JSON object for a suite of targets, and the JSON object of a
// command that failed before it printed its result. It reads results data
// only (measure, reports): it knows no Redis.
package ci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ratelab/ratelab/internal/version"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

// Environment variables CI runners set.
const (
	EnvGitHubActions = "GITHUB_ACTIONS"      // "true" on GitHub Actions
	EnvStepSummary   = "GITHUB_STEP_SUMMARY" // the file of the job's Markdown summary
)

// Outputs say which CI outputs a verify writes beside its own report.
// The zero Outputs writes nothing.
type Outputs struct {
	// SuiteJSON writes the targets' reports as one JSON object (WriteSuite).
	SuiteJSON bool
	// GitHubActions writes the annotations, on stdout, or on stderr when
	// DataOnStdout; FromEnv sets it when GITHUB_ACTIONS is "true".
	GitHubActions bool
	// DataOnStdout says stdout carries what a program reads (the JUnit XML
	// report, or JSON), which an annotation line would break.
	DataOnStdout bool
	// StepSummary is the file the job's Markdown summary is appended to;
	// "" for none. FromEnv sets it from GITHUB_STEP_SUMMARY.
	StepSummary string
}

// FromEnv returns o with GitHubActions and StepSummary as the CI runner's
// environment sets them.
func (o Outputs) FromEnv() Outputs {
	o.GitHubActions = os.Getenv(EnvGitHubActions) == "true"
	o.StepSummary = os.Getenv(EnvStepSummary)
	return o
}

// WriteSuite writes done to w as one JSON object (SuiteJSON) when
// o.SuiteJSON; nothing otherwise. Errors are w's.
func (o Outputs) WriteSuite(w io.Writer, done []reports.Verified) error {
	if !o.SuiteJSON {
		return nil
	}
	return WriteSuiteJSON(w, done)
}

// WriteGitHub writes the GitHub Actions annotations of done (to stdout, or
// to stderr when stdout carries XML or JSON: the runner reads commands
// from both; WriteCommands)
// and appends the job summary to o.StepSummary, as o asks. Errors name the
// summary's variable ("$GITHUB_STEP_SUMMARY: ...").
func (o Outputs) WriteGitHub(stdout, stderr io.Writer, done []reports.Verified) error {
	var errs []error
	if o.GitHubActions {
		to := stdout
		if o.DataOnStdout {
			to = stderr
		}
		var b bytes.Buffer
		_ = reports.WriteAnnotations(&b, done) // a bytes.Buffer does not fail
		errs = append(errs, WriteCommands(to, b.Bytes()))
	}
	if o.StepSummary != "" {
		if err := appendFile(o.StepSummary, func(w io.Writer) error { return reports.WriteStepSummary(w, done) }); err != nil {
			errs = append(errs, fmt.Errorf("$%s: %w", EnvStepSummary, err))
		}
	}
	return errors.Join(errs...)
}

// Collect is a verify's CI outputs over its targets, gathered as they
// end (Suite) and written at the end (Write): the JUnit XML report, the
// GitHub Actions outputs the environment asks for (Outputs.FromEnv) and,
// for Several targets in JSON, their one object. Not safe for concurrent
// use.
type Collect struct {
	// JUnit is the JUnit report's path; "-" for stdout, "" for none.
	JUnit string
	// JSON says the command prints JSON (reports.JSON).
	JSON bool
	// Several says more than one target is verified: with JSON, their
	// reports go out at the end as one object, none as each ends.
	Several bool
	// Suite tallies the targets as they end (verifyjob.Each).
	Suite Suite
}

// Prints reports whether a target's report goes to stdout as it ends: not
// when stdout carries the JUnit report, nor when several targets' JSON
// waits for the end.
func (c *Collect) Prints() bool { return c.JUnit != "-" && !(c.Several && c.JSON) }

// Write writes the outputs of the targets done: the suite's JSON object
// (Several and JSON, unless stdout carries the JUnit report), the JUnit
// report (WriteJUnit, its error passed through junitErr, by which the
// caller names the file) and the GitHub Actions outputs (WriteGitHub),
// on stdout and stderr: with JSON or the JUnit report on stdout, stdout
// holds nothing else. Errors are joined in that order.
func (c *Collect) Write(stdout, stderr io.Writer, junitErr func(error) error) error {
	o := Outputs{SuiteJSON: c.Several && c.JSON && c.JUnit != "-", DataOnStdout: c.JUnit == "-" || c.JSON}.FromEnv()
	errs := []error{o.WriteSuite(stdout, c.Suite.Done)}
	if err := WriteJUnit(c.JUnit, stdout, c.Suite.Done); err != nil {
		errs = append(errs, junitErr(err))
	}
	return errors.Join(append(errs, o.WriteGitHub(stdout, stderr, c.Suite.Done))...)
}

// WriteJUnit writes done as a JUnit XML report (reports.WriteJUnit) to the
// file path, replaced, or to stdout when path is "-"; nothing when path is
// "". Errors are the file's or stdout's, unprefixed.
func WriteJUnit(path string, stdout io.Writer, done []reports.Verified) error {
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	if err := reports.WriteJUnit(&b, done); err != nil {
		return err
	}
	if path == "-" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// SuiteJSON is verify's JSON for several targets: the Header's tool and
// version, the overall verdict and every target's report.
type SuiteJSON struct {
	SchemaVersion int                     `json:"schema_version"`
	Tool          string                  `json:"tool"`
	ToolVersion   string                  `json:"tool_version"`
	Command       string                  `json:"command"`
	Verdict       measure.Verdict         `json:"verdict"`
	Complete      bool                    `json:"complete"`
	Targets       []*measure.VerifyReport `json:"targets"`
}

// WriteSuiteJSON writes done to w as one indented SuiteJSON object: the
// verdict is the worst of the targets' (Worse), complete when all are.
// Errors are w's.
func WriteSuiteJSON(w io.Writer, done []reports.Verified) error {
	out := SuiteJSON{SchemaVersion: measure.SchemaVersion, Tool: "ratelab", ToolVersion: version.String(),
		Command: "verify", Verdict: measure.Holds, Complete: true}
	for _, v := range done {
		out.Targets = append(out.Targets, v.Report)
		out.Complete = out.Complete && v.Report.Complete
		out.Verdict = Worse(out.Verdict, v.Report.Verdict)
	}
	return writeJSON(w, out)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Worse is the more serious of two verdicts: a failure over inconclusive
// over holds.
func Worse(a, b measure.Verdict) measure.Verdict {
	rank := func(v measure.Verdict) int {
		switch v {
		case measure.Violated:
			return 4
		case measure.Starved, measure.Interfered:
			return 3
		case measure.Holds, measure.Skipped:
			return 0
		}
		return 2 // inconclusive, or none
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func appendFile(path string, write func(io.Writer) error) error {
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		_ = fh.Close() // the write's error is the one to say
		return err
	}
	return fh.Close()
}

// ErrorReport is the report of the target named target, with limits ls
// (the first is shown; none: no limit), that stopped with err before
// verify made one (Redis unreachable, a script that does not load): for
// the JUnit and JSON outputs, which then still name the target. Its
// verdict is inconclusive; a nil err is said as "stopped before a verdict".
func ErrorReport(target string, ls []limit.Limit, err error) *measure.VerifyReport {
	msg := "stopped before a verdict"
	if err != nil {
		msg = err.Error()
	}
	r := &measure.VerifyReport{Header: measure.Header{SchemaVersion: measure.SchemaVersion, Tool: "ratelab",
		ToolVersion: version.String(), Command: "verify", Error: msg}, Target: target, Verdict: measure.Inconclusive}
	if len(ls) > 0 {
		r.LimitDesc, r.Limit, r.WindowMS = ls[0].String(), ls[0].Count, ls[0].Window.Milliseconds()
	}
	return r
}

// Suite tallies a verify over several targets as each ends. The zero Suite
// is empty and ready; it is not safe for concurrent use.
type Suite struct {
	// Done are the targets' reports, in the order they ended.
	Done           []reports.Verified
	failed, broken []string
}

// Add records one target's end: v its report, label its name as the
// summary says it, failed whether it failed its verification (exit 1),
// err its error (nil: it holds; else, unless failed, it could not be
// verified).
func (s *Suite) Add(v reports.Verified, label string, failed bool, err error) {
	s.Done = append(s.Done, v)
	switch {
	case err == nil:
	case failed:
		s.failed = append(s.failed, label)
	default:
		s.broken = append(s.broken, label)
	}
}

// Outcome says how the suite of total targets ended, as one line
// ("verify: 1 of 3 targets hold; failed: a; not verified: b"), and
// whether any target failed its verification; "" when every target
// finished holding.
func (s *Suite) Outcome(total int) (msg string, failed bool) {
	sum := fmt.Sprintf("%d of %d targets hold", total-len(s.failed)-len(s.broken), total)
	switch {
	case len(s.failed) > 0:
		also := ""
		if len(s.broken) > 0 {
			also = "; not verified: " + strings.Join(s.broken, ", ")
		}
		return fmt.Sprintf("verify: %s; failed: %s%s", sum, strings.Join(s.failed, ", "), also), true
	case len(s.broken) > 0:
		return fmt.Sprintf("verify: %s; not verified: %s (see above)", sum, strings.Join(s.broken, ", ")), false
	}
	return "", false
}

// CountingWriter counts what went through it to W, so that a command
// knows whether it printed its result before it failed. Not safe for
// concurrent use unless W is and the count is read after the writes.
type CountingWriter struct {
	W io.Writer
	N int64 // bytes written to W
}

func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// ErrorJSON is what `--format json` prints on stdout when a command fails
// before it printed its result: the Header's identity fields, the error
// and the exit code.
type ErrorJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	ToolVersion   string `json:"tool_version"`
	Command       string `json:"command"`
	Complete      bool   `json:"complete"`
	Error         string `json:"error"`
	ExitCode      int    `json:"exit_code"`
}

// WriteErrorJSON writes to w the JSON object of command that failed with
// msg and exit code before it printed its result (Redis unreachable, a bad
// flag): the Header's identity fields, complete false, the error and the
// exit code. Errors are w's.
func WriteErrorJSON(w io.Writer, command, msg string, code int) error {
	return writeJSON(w, ErrorJSON{SchemaVersion: measure.SchemaVersion, Tool: "ratelab", ToolVersion: version.String(),
		Command: command, Error: msg, ExitCode: code})
}

// Writers returns the stdout and stderr a command gets, from its command
// line args as cobra will parse them (up to "--"): stderr discards
// everything with --quiet (-q; the final error is written past it), and
// stdout is a *CountingWriter with --format json, so that a command that
// failed knows whether it printed its result (WriteErrorJSONIfSilent).
// Otherwise they are stdout and stderr themselves, so a terminal is still
// seen as one (the live demo, progress bars).
func Writers(args []string, stdout, stderr io.Writer) (io.Writer, io.Writer) {
	quiet, json := false, false
scan:
	for i, a := range args {
		switch {
		case a == "--":
			break scan
		case a == "-q" || a == "--quiet" || a == "--quiet=true":
			quiet = true
		case a == "--quiet=false":
			quiet = false
		case a == "--format=json" || a == "--format" && i+1 < len(args) && args[i+1] == string(reports.JSON):
			json = true
		}
	}
	if quiet {
		stderr = io.Discard
	}
	if json {
		stdout = &CountingWriter{W: stdout}
	}
	return stdout, stderr
}

// WriteErrorJSONIfSilent writes WriteErrorJSON's object for command to
// out when out is a *CountingWriter (Writers, --format json) that nothing
// went through yet; else it writes nothing. Errors are out's.
func WriteErrorJSONIfSilent(out io.Writer, command, msg string, code int) error {
	stdout, ok := out.(*CountingWriter)
	if !ok || stdout.N > 0 {
		return nil
	}
	return WriteErrorJSON(stdout, command, msg, code)
}
