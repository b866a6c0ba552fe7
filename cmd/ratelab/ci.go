package main

// ratelab in CI (issue 22): verify's --junit, the GitHub Actions
// annotations and job summary, several targets in one command, Redis from
// the environment, ratelab.yaml found in the working directory, --quiet,
// a JSON object on stdout whatever happens, exit 130 on Ctrl-C.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/version"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/targets"
)

// Exit codes after a signal stopped the command, as shells report it:
// 128 + the signal's number.
const (
	exitInterrupted = 130 // Ctrl-C (SIGINT)
	exitTerminated  = 143 // SIGTERM
)

// signalExit is the exit code of a command whose ctx a signal cancelled
// (signal.NotifyContext's cause names it).
func signalExit(ctx context.Context) int {
	if strings.Contains(context.Cause(ctx).Error(), syscall.SIGTERM.String()) {
		return exitTerminated
	}
	return exitInterrupted
}

// Redis from the environment, as CI services hand it over (flag > env > auto).
const (
	envRedis    = "RATELAB_REDIS" // ratelab's own: any --redis value
	envRedisURL = "REDIS_URL"     // the common one: a URL
)

// Environment variables CI runners set.
const (
	envGitHubActions = "GITHUB_ACTIONS"      // "true" on GitHub Actions
	envStepSummary   = "GITHUB_STEP_SUMMARY" // the file of the job's Markdown summary
)

// redisFromEnv sets spec, --redis, from RATELAB_REDIS or else REDIS_URL
// when the flag was not given, and says on stderr which variable was used
// (its value with any password hidden). The flag wins over both.
func redisFromEnv(c *cobra.Command, spec *string) {
	if c.Flags().Changed("redis") {
		return
	}
	for _, name := range []string{envRedis, envRedisURL} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			if *spec == v {
				return // said for an earlier target of this command
			}
			*spec = v
			fmt.Fprintf(c.ErrOrStderr(), "ratelab: --redis from $%s: %s\n", name, server.RedactURL(v))
			return
		}
	}
}

// ciFlags are verify's CI outputs and what they collect from each target.
type ciFlags struct {
	junit string // --junit FILE ("-": stdout)
	// done collects each target's report as verify finishes it (record);
	// current is the running target's.
	done    []reports.Verified
	current *measure.VerifyReport
	// several: more than one target; their JSON goes out at the end as one
	// object (printed at once otherwise).
	several bool
}

func (f *ciFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file (- for stdout): one testcase per target, limit and family, the counter-example in the failure")
}

// record keeps rep, the running target's report.
func (f *ciFlags) record(rep *measure.VerifyReport) { f.current = rep }

// print writes rep to stdout in --format, unless a suite's JSON waits for
// the end (one object) or the JUnit report goes to stdout.
func (f *ciFlags) print(v *verifyFlags, rep *measure.VerifyReport, stdout io.Writer) error {
	if f.junit == "-" || f.several && v.format.value == string(reports.JSON) {
		return nil
	}
	return v.format.render(rep)(stdout)
}

// suiteJSON is verify's JSON for several targets: the Header's tool and
// version, the overall verdict and every target's report.
type suiteJSON struct {
	SchemaVersion int                     `json:"schema_version"`
	Tool          string                  `json:"tool"`
	ToolVersion   string                  `json:"tool_version"`
	Command       string                  `json:"command"`
	Verdict       measure.Verdict         `json:"verdict"`
	Complete      bool                    `json:"complete"`
	Targets       []*measure.VerifyReport `json:"targets"`
}

// verifyTargets is verify's RunE: it loads the targets (ratelab.yaml from
// the working directory when none is given), verifies each in turn with
// runVerify, and writes the CI outputs of them all. One exit code: 1 when
// any target failed its verification, else 2 when any could not be
// verified, else 0; Ctrl-C stops at the running target.
func verifyTargets(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	if f.replay != "" {
		return runReplay(c, f, stdout, stderr) // its target: the flags', else the one verify.json records
	}
	found := false
	if !f.target.given(c) {
		if _, err := os.Stat(targets.DefaultFile); err == nil {
			f.target.configs, found = []string{targets.DefaultFile}, true
			fmt.Fprintf(stderr, "ratelab: verifying %s (found in the working directory)\n", targets.DefaultFile)
		}
	}
	if err := f.target.load(c); err != nil {
		if !f.target.given(c) && !found {
			return usagef("%w; or put a %s in the working directory", err, targets.DefaultFile)
		}
		return err
	}
	specs := f.target.specs
	f.ci.several = len(specs) > 1
	base := f.out.dir
	var failed, broken []string
	var errs []error
	for _, s := range specs {
		if c.Context().Err() != nil {
			break
		}
		f.target.specs = []targets.Spec{s}
		if f.ci.several && base != "" {
			f.out.dir = filepath.Join(base, fileName(s.Name))
		}
		if f.ci.several {
			fmt.Fprintf(stderr, "ratelab: target %s\n", specName(s))
		}
		f.ci.current = nil
		err := runVerify(c, f, stdout, stderr)
		rep := f.ci.current
		if rep == nil { // stopped before a report: the error is the testcase
			rep = errorReport(s, err)
		}
		f.ci.done = append(f.ci.done, reports.Verified{Report: rep, Name: s.Name, File: specFile(s)})
		var fe failError
		switch {
		case err == nil:
		case errors.As(err, &fe):
			failed = append(failed, specName(s))
			errs = append(errs, err)
		default:
			broken = append(broken, specName(s))
			errs = append(errs, err)
		}
	}
	if err := f.ci.write(f, stdout, stderr); err != nil {
		errs = append(errs, err)
	}
	if !f.ci.several {
		return errors.Join(errs...) // the one target's error as it was
	}
	sum := fmt.Sprintf("%d of %d targets hold", len(specs)-len(failed)-len(broken), len(specs))
	for _, err := range errs {
		if !errors.As(err, new(failError)) {
			fmt.Fprintln(stderr, "ratelab:", err)
		}
	}
	switch {
	case len(failed) > 0:
		return failError{fmt.Sprintf("verify: %s; failed: %s%s", sum, strings.Join(failed, ", "), alsoBroken(broken))}
	case len(broken) > 0:
		return usagef("verify: %s; not verified: %s (see above)", sum, strings.Join(broken, ", "))
	}
	return nil
}

func alsoBroken(broken []string) string {
	if len(broken) == 0 {
		return ""
	}
	return "; not verified: " + strings.Join(broken, ", ")
}

// write writes the CI outputs of the targets done: --junit, the GitHub
// Actions annotations (when GITHUB_ACTIONS is true: on stdout, or on
// stderr when stdout carries the JUnit report), the job summary ($GITHUB_STEP_SUMMARY, appended)
// and a suite's JSON object.
func (f *ciFlags) write(v *verifyFlags, stdout, stderr io.Writer) error {
	var errs []error
	if f.several && v.format.value == string(reports.JSON) && f.junit != "-" {
		errs = append(errs, writeSuiteJSON(stdout, f.done))
	}
	if f.junit != "" {
		var b bytes.Buffer
		err := reports.WriteJUnit(&b, f.done)
		if err == nil {
			if f.junit == "-" {
				_, err = stdout.Write(b.Bytes())
			} else {
				err = os.WriteFile(f.junit, b.Bytes(), 0o644)
			}
		}
		if err != nil {
			errs = append(errs, usagef("--junit %s: %w", f.junit, err))
		}
	}
	if os.Getenv(envGitHubActions) == "true" {
		to := stdout
		if f.junit == "-" {
			to = stderr // stdout is the XML; the runner reads commands from both
		}
		errs = append(errs, reports.WriteAnnotations(to, f.done))
	}
	if path := os.Getenv(envStepSummary); path != "" {
		if err := appendFile(path, func(w io.Writer) error { return reports.WriteStepSummary(w, f.done) }); err != nil {
			errs = append(errs, fmt.Errorf("$%s: %w", envStepSummary, err))
		}
	}
	return errors.Join(errs...)
}

func writeSuiteJSON(w io.Writer, done []reports.Verified) error {
	out := suiteJSON{SchemaVersion: measure.SchemaVersion, Tool: "ratelab", ToolVersion: version.String(),
		Command: "verify", Verdict: measure.Holds, Complete: true}
	for _, v := range done {
		out.Targets = append(out.Targets, v.Report)
		out.Complete = out.Complete && v.Report.Complete
		out.Verdict = worse(out.Verdict, v.Report.Verdict)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// worse is the more serious of two verdicts: a failure over inconclusive
// over holds.
func worse(a, b measure.Verdict) measure.Verdict {
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

// errorReport is the report of target s that stopped with err before
// verify made one (Redis unreachable, a script that does not load): for
// the JUnit and JSON outputs, which then still name the target.
func errorReport(s targets.Spec, err error) *measure.VerifyReport {
	msg := "stopped before a verdict"
	if err != nil {
		msg = err.Error()
	}
	r := &measure.VerifyReport{Header: measure.Header{SchemaVersion: measure.SchemaVersion, Tool: "ratelab",
		ToolVersion: version.String(), Command: "verify", Error: msg}, Target: specName(s), Verdict: measure.Inconclusive}
	if len(s.Limits) > 0 {
		r.LimitDesc, r.Limit, r.WindowMS = s.Limits[0].String(), s.Limits[0].Count, s.Limits[0].Window.Milliseconds()
	}
	return r
}

func specName(s targets.Spec) string {
	for _, n := range []string{s.Name, s.Algorithm, s.HTTP, s.Script} {
		if n != "" {
			return n
		}
	}
	return "target"
}

// specFile is the file a CI tool should point at for s: its target file,
// else its script.
func specFile(s targets.Spec) string {
	if s.From != "" && s.From != "-" {
		return s.From
	}
	return s.Script
}

// fileName makes a target's name a directory name.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, name)
}

// ciWriters are the stdout and stderr the commands get: stderr discards
// everything with --quiet (Main writes the final error past it), and
// stdout counts what it is given with --format json (so that Main knows
// whether the command printed its result before it failed:
// printErrorJSON). Otherwise they are stdout and stderr themselves, so a
// terminal is still seen as one (the live demo, progress bars). The flags
// are found in args as cobra will parse them; --quiet is declared by
// bindQuiet.
func ciWriters(args []string, stdout, stderr io.Writer) (io.Writer, io.Writer) {
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
		stdout = &countingWriter{w: stdout}
	}
	return stdout, stderr
}

// bindQuiet declares --quiet (-q) on every command; ciWriters acts on it.
func bindQuiet(root *cobra.Command) {
	root.PersistentFlags().BoolP("quiet", "q", false, "print only the result on stdout and, on failure, the error on stderr (no progress, no notes)")
}

// countingWriter counts what went to stdout, so Main knows whether a
// command printed its result before it failed.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// errorJSON is what `--format json` prints on stdout when a command fails
// before it printed its result (Redis unreachable, a bad flag): the
// Header's identity fields, the error and the exit code.
type errorJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	ToolVersion   string `json:"tool_version"`
	Command       string `json:"command"`
	Complete      bool   `json:"complete"`
	Error         string `json:"error"`
	ExitCode      int    `json:"exit_code"`
}

// printErrorJSON writes errorJSON to stdout when cmd was asked for JSON
// (ciWriters made stdout a countingWriter) and printed nothing.
func printErrorJSON(cmd *cobra.Command, out io.Writer, msg string, code int) {
	stdout, ok := out.(*countingWriter)
	if cmd == nil || !ok || stdout.n > 0 {
		return
	}
	fl := cmd.Flags().Lookup("format")
	if fl == nil || fl.Value.String() != string(reports.JSON) {
		return
	}
	b, err := json.MarshalIndent(errorJSON{SchemaVersion: measure.SchemaVersion, Tool: "ratelab", ToolVersion: version.String(),
		Command: cmd.Name(), Error: msg, ExitCode: code}, "", "  ")
	if err == nil {
		_, _ = stdout.Write(append(b, '\n')) // stdout gone: the error is on stderr already
	}
}
