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

	"github.com/ratelab/ratelab/harness/verifyjob"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/targets"
)

// verifyTargets is verify's RunE: it loads the targets (ratelab.yaml from
// the working directory when none is given), verifies each in turn with
// runVerify, and writes the CI outputs of them all (ci.Collect). One exit
// code: 1 when any target failed its verification, else 2 when any could
// not be verified, else 0; Ctrl-C stops at the running target.
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
	f.ci.Several, f.ci.JSON = len(specs) > 1, f.format.value == string(reports.JSON)
	isFail := func(err error) bool { return errors.As(err, new(failError)) }
	errs := verifyjob.Each(c.Context(), specs, f.out.dir, stderr, &f.ci.Suite, isFail, func(s targets.Spec, out string) (*measure.VerifyReport, error) {
		f.target.specs, f.out.dir, f.current = []targets.Spec{s}, out, nil
		err := runVerify(c, f, stdout, stderr)
		return f.current, err
	})
	if err := f.ci.Write(stdout, stderr, func(err error) error { return usagef("--junit %s: %w", f.ci.JUnit, err) }); err != nil {
		errs = append(errs, err)
	}
	if !f.ci.Several {
		return errors.Join(errs...) // the one target's error as it was
	}
	for _, err := range errs {
		if !isFail(err) {
			fmt.Fprintln(stderr, "ratelab:", err)
		}
	}
	return outcome(f.ci.Suite.Outcome(len(specs)))
}

// outcome is the error of a verdict's message (verifyjob.Outcome,
// ci.Suite.Outcome): nil when there is none, a failError (exit 1) when
// failed, else exit 2.
func outcome(msg string, failed bool) error {
	switch {
	case failed:
		return failError{msg}
	case msg != "":
		return usagef("%s", msg)
	}
	return nil
}
