// Command ratelab compares Redis rate-limiting algorithms running as Lua
// scripts in a real Redis, and verifies their behaviour at window boundaries.
package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/internal/progress"
	"github.com/ratelab/ratelab/internal/version"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/publish/ci"
	"github.com/ratelab/ratelab/reports"
)

// Exit codes (contract).
const (
	exitOK    = 0
	exitFail  = 1 // a verification or threshold failed
	exitUsage = 2 // usage or environment error
)

// usageError marks errors caused by the command line (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failError marks a failed verification or threshold (exit 1); the command
// has already printed its evidence.
type failError struct{ msg string }

func (e failError) Error() string { return e.msg }

// Main runs ratelab with args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// progress meters and the runner write from goroutines of their own
	stdout, stderr = progress.Serialized(stdout), progress.Serialized(stderr)
	if os.Getenv(ci.EnvGitHubActions) == "true" {
		// names, paths, replies and file bytes reach both streams in many
		// places: here, on the way out, no line of theirs can be a workflow
		// command the runner obeys; ratelab's own annotations pass
		// (ci.WriteCommands)
		nOut, nErr := ci.Neutralize(stdout), ci.Neutralize(stderr)
		defer func() { _, _ = nOut.Flush(), nErr.Flush() }() // a partial last line; nowhere to report a failed write
		stdout, stderr = nOut, nErr
	}
	defer outdir.ReleaseAll() // the results directories this command claimed
	// Ctrl-C ends every call waiting on Redis at once, even on a Redis that
	// hangs; unregistered before stop cancels ctx on return
	defer server.AbortOnCancel(ctx)()
	out, errOut := ci.Writers(args, stdout, stderr) // --format json's error object, --quiet
	root := newRoot(out, errOut)
	// --quiet (-q) on every command; ci.Writers acts on it
	root.PersistentFlags().BoolP("quiet", "q", false, "print only the result on stdout and, on failure, the error on stderr (no progress, no notes)")
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	msg := harness.Interrupted(ctx, err) // Ctrl-C said once
	if errors.Is(err, guard.ErrRefused) {
		msg += " — pass --trust-script to run it anyway"
	}
	msg = input.Clean(msg) // a script's reply or a file's bytes never drive the terminal
	fmt.Fprintln(stderr, "ratelab:", msg)
	code := exitUsage
	var fe failError
	switch {
	case ctx.Err() != nil:
		code = harness.SignalExit(ctx)
	case errors.As(err, &fe):
		code = exitFail
	}
	if fl := cmd.Flags().Lookup("format"); fl != nil && fl.Value.String() == string(reports.JSON) {
		_ = ci.WriteErrorJSONIfSilent(out, cmd.Name(), msg, code) // stdout gone: the error is on stderr already
	}
	return code
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "ratelab",
		Short:         "Compare Redis rate limiters and verify their window-boundary behaviour",
		Long:          helpText("root", "long"),
		Example:       helpText("root", "example"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if err := emptyLists(c, args); err != nil {
			return err
		}
		return noDuplicates(c)
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(newRunCmd(stdout, stderr), newVerifyCmd(stdout, stderr), newReportCmd(stdout, stderr))
	root.AddCommand(newCleanCmd(stdout, stderr))
	root.AddCommand(newCapacityCmd(stdout, stderr), newBenchCmd(stdout, stderr))
	root.AddCommand(newDemoCmd(stdout, stderr))
	root.AddCommand(newVerifyFamiliesTopic())
	return root
}

// listFlags are the flags that name targets or scenarios, each once: a
// name given twice would run twice on the same keys
// (`--algorithms fixed-window,fixed-window` would share its keys and
// split what they accept between the two rows).
var listFlags = []string{"algorithms", "scenarios", "script", "config", "scenario-file"}

// noDuplicates refuses a name given twice in one of c's listFlags.
func noDuplicates(c *cobra.Command) error {
	for _, name := range listFlags {
		f := c.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		var vals []string
		if sv, ok := f.Value.(interface{ GetSlice() []string }); ok {
			vals = sv.GetSlice()
		}
		seen := map[string]bool{}
		for _, v := range vals {
			if seen[v] {
				return usagef("--%s: %s given twice (both would run on the same keys; give each once)", name, v)
			}
			seen[v] = true
		}
	}
	return nil
}

// command is the command of use (named by its first word) and short, whose
// long help and examples are help/<name>.*.txt (helpText, args filling the
// long help), that takes no arguments and runs run.
func command(use, short string, run func(c *cobra.Command) error, args ...string) *cobra.Command {
	name, _, _ := strings.Cut(use, " ")
	return &cobra.Command{Use: use, Short: short, Long: helpText(name, "long", args...), Example: helpText(name, "example"),
		Args: cobra.NoArgs, RunE: func(c *cobra.Command, _ []string) error { return run(c) }}
}

// helpFiles are the commands' long help and examples, kept as text beside
// the code: help/<command>.long.txt and help/<command>.example.txt.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns help/<command>.<part>.txt with {{0}}, {{1}}, ... replaced
// by args (lists that come from the registries, such as the scenario names).
func helpText(command, part string, args ...string) string {
	b, err := helpFiles.ReadFile("help/" + command + "." + part + ".txt")
	if err != nil {
		panic(fmt.Sprintf("ratelab: no help text for %s %s", command, part))
	}
	s := string(b)
	for i, a := range args {
		s = strings.ReplaceAll(s, fmt.Sprintf("{{%d}}", i), a)
	}
	return s
}

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
