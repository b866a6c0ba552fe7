package main

// ratelab in CI (issue 22): verify's --junit, the GitHub Actions
// annotations and job summary, several targets in one command, Redis from
// the environment, ratelab.yaml found in the working directory, --quiet,
// a JSON object on stdout whatever happens, exit 130 on Ctrl-C.

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verifyjob"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/ci"
	"github.com/ratelab/ratelab/targets"
)

// redisFromEnv sets spec, --redis, from RATELAB_REDIS or else REDIS_URL
// when the flag was not given, and says on stderr which variable was used
// (its value with any password hidden). The flag wins over both.
func redisFromEnv(c *cobra.Command, spec *string) {
	v, name := engine.FromEnv()
	if c.Flags().Changed("redis") || v == "" || *spec == v { // the flag wins; or said for an earlier target
		return
	}
	*spec = v
	fmt.Fprintf(c.ErrOrStderr(), "ratelab: --redis from $%s: %s\n", name, server.RedactURL(v))
}

// ciFlags are verify's CI outputs and what they collect from each target.
type ciFlags struct {
	junit string // --junit FILE ("-": stdout)
	// suite collects each target's report as verify finishes it (record);
	// current is the running target's.
	suite   ci.Suite
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
			f.target.g.Files, found = []string{targets.DefaultFile}, true
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
	isFail := func(err error) bool { return errors.As(err, new(failError)) }
	errs := verifyjob.Each(c.Context(), specs, f.out.dir, stderr, &f.ci.suite, isFail, func(s targets.Spec, out string) (*measure.VerifyReport, error) {
		f.target.specs, f.out.dir, f.ci.current = []targets.Spec{s}, out, nil
		err := runVerify(c, f, stdout, stderr)
		return f.ci.current, err
	})
	if err := f.ci.write(f, stdout, stderr); err != nil {
		errs = append(errs, err)
	}
	if !f.ci.several {
		return errors.Join(errs...) // the one target's error as it was
	}
	for _, err := range errs {
		if !isFail(err) {
			fmt.Fprintln(stderr, "ratelab:", err)
		}
	}
	switch msg, failed := f.ci.suite.Outcome(len(specs)); {
	case failed:
		return failError{msg}
	case msg != "":
		return usagef("%s", msg)
	}
	return nil
}

// write writes the CI outputs of the targets done: --junit, the GitHub
// Actions annotations (when GITHUB_ACTIONS is true: on stdout, or on
// stderr when stdout carries the JUnit report), the job summary ($GITHUB_STEP_SUMMARY, appended)
// and a suite's JSON object.
func (f *ciFlags) write(v *verifyFlags, stdout, stderr io.Writer) error {
	o := ci.Outputs{SuiteJSON: f.several && v.format.value == string(reports.JSON) && f.junit != "-", XMLOnStdout: f.junit == "-"}.FromEnv()
	errs := []error{o.WriteSuite(stdout, f.suite.Done)}
	if err := ci.WriteJUnit(f.junit, stdout, f.suite.Done); err != nil {
		errs = append(errs, usagef("--junit %s: %w", f.junit, err))
	}
	return errors.Join(append(errs, o.WriteGitHub(stdout, stderr, f.suite.Done))...)
}

// bindQuiet declares --quiet (-q) on every command; ci.Writers acts on it.
func bindQuiet(root *cobra.Command) {
	root.PersistentFlags().BoolP("quiet", "q", false, "print only the result on stdout and, on failure, the error on stderr (no progress, no notes)")
}

// printErrorJSON writes the error's JSON object to stdout when cmd was
// asked for --format json and printed nothing (ci.WriteErrorJSONIfSilent).
func printErrorJSON(cmd *cobra.Command, out io.Writer, msg string, code int) {
	if cmd == nil {
		return
	}
	if fl := cmd.Flags().Lookup("format"); fl != nil && fl.Value.String() == string(reports.JSON) {
		_ = ci.WriteErrorJSONIfSilent(out, cmd.Name(), msg, code) // stdout gone: the error is on stderr already
	}
}
