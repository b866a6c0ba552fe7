package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/launch"
	"github.com/ratelab/ratelab/targets"
)

// targetFlags name the limiters a command drives: for verify one target,
// a built-in --algorithm, a user's --script with its --key and --arg
// templates and its --allowed predicate, an --http endpoint, or a --config
// file describing one of these; for run, capacity and bench any number of
// --script (sharing --key, --arg, --allowed) and --config targets, beside
// the built-ins of --algorithms. Most flags go straight into g.
type targetFlags struct {
	g           targets.Given
	script      string // verify's one --script (g.Scripts: run's, capacity's, bench's)
	allowedWhen int64
	specs       []targets.Spec // read by load
	trust       bool           // --trust-script
	guarded     guard.Scripts  // the scripts' connection under guard (see guard); zero: the command's own
}

// execHelp is the --exec flag's help.
const execHelp = `an adapter command for a limiter in any language, run as sh -c CMD once per simulated client: JSON lines {"key","cost","now_us"} on its stdin, {"allowed": true|false} back; REDIS_URL, RATELAB_LIMIT, RATELAB_WINDOW_MS in its environment (docs/exec.md)`

const templateHelp = `templates: {key} {now_us} {now_ms} {now_s} {window_us} {window_ms} {window_s} {limit} {cost} {request_id}, or expressions such as {floor(now_ms / window_ms)}`

// add declares verify's target flags on c.
func (t *targetFlags) add(c *cobra.Command) {
	fl := c.Flags()
	t.g.Several = true
	fl.StringVar(&t.g.Algorithm, "algorithm", "", "a built-in algorithm: "+strings.Join(targets.KnownAlgorithms(), ", "))
	fl.StringVar(&t.script, "script", "", "a Lua file to verify (KEYS from --key, ARGV from --arg)")
	fl.StringVar(&t.g.HTTP, "http", "", "an HTTP endpoint to verify (GET; 2xx allowed, 429 denied)")
	fl.StringVar(&t.g.Exec, "exec", "", execHelp)
	fl.StringArrayVar(&t.g.Files, "config", nil, "a target file (ratelab.yaml: script, keys, args, allowed, limits; docs/config.md)")
	t.addFunctionFlags(c, "a function library to verify (#!lua name=...: FUNCTION LOAD, then FCALL --fcall with KEYS from --key, ARGV from --arg; docs/functions.md)")
	t.addScriptFlags(c)
}

// addFunctionFlags declares --function (its help usage) and --fcall on c.
func (t *targetFlags) addFunctionFlags(c *cobra.Command, usage string) {
	fl := c.Flags()
	fl.StringVar(&t.g.Function, "function", "", usage)
	fl.StringVar(&t.g.FCall, "fcall", "", "the function of the --function library to call (default: its one function)")
}

// addMany declares the target flags of run, capacity and bench on c.
func (t *targetFlags) addMany(c *cobra.Command) {
	t.g.BesideBuiltins = true
	fl := c.Flags()
	fl.StringArrayVar(&t.g.Scripts, "script", nil, "a Lua file to add beside the built-ins, named by its file, repeatable (all share --key, --arg, --allowed)")
	fl.StringArrayVar(&t.g.Files, "config", nil, "a target file to add beside the built-ins (ratelab.yaml; docs/config.md), repeatable")
	t.addScriptFlags(c)
}

// addManyFunction declares run's --function and --fcall on c (capacity and
// bench measure EVALSHA scripts only).
func (t *targetFlags) addManyFunction(c *cobra.Command) {
	t.addFunctionFlags(c, "a function library to add beside the built-ins, named by its file (#!lua name=...: FUNCTION LOAD, then FCALL --fcall; shares --key, --arg, --allowed)")
}

// addExec declares run's --exec on c (capacity and bench measure atomic
// scripts only).
func (t *targetFlags) addExec(c *cobra.Command) {
	c.Flags().StringVar(&t.g.Exec, "exec", "", execHelp+"; its row stands beside the built-ins'")
}

func (t *targetFlags) addScriptFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.StringArrayVar(&t.g.Keys, "key", nil, "a KEYS template for --script, repeatable, in order; must start with {key} (default one key: {key}); "+templateHelp)
	fl.StringArrayVar(&t.g.Args, "arg", nil, "an ARGV template for --script, repeatable, in order; "+templateHelp)
	fl.StringVar(&t.g.Allowed, "allowed", "", "when the --script reply means allowed: an expression over reply (nil for Lua false; arrays from 1) and the placeholders, e.g. 'reply != nil', 'reply <= limit', 'reply[2] >= 0', 'reply in [1, 2]'")
	fl.StringVar(&t.g.Setup, "setup", "", "a Lua set-up script for --script, run once per key before its first call, with the same --key and --arg templates (e.g. to store the limiter's rate in a hash)")
	fl.BoolVar(&t.trust, "trust-script", false, "on your own Redis, let the --script touch any key and run any command (default: it runs as a temporary ACL user limited to this run's keys)")
	fl.BoolVar(&t.g.ClientSide, "client-side", false, "run the --script (and --config scripts) client-side: every redis.call its own round trip from ratelab, as application code sends it, instead of one atomic script in Redis (redis.pipeline, redis.transaction and WATCH too; verify adds the race family)")
	fl.Int64Var(&t.allowedWhen, "allowed-when", 1, "shorthand for --allowed: the --script reply integer (or first element) that means allowed (0 for scripts that return 1 when over the limit)")
}

// given reports whether any flag naming a target was given.
func (t *targetFlags) given(c *cobra.Command) bool {
	for _, name := range []string{"algorithm", "script", "function", "fcall", "http", "exec", "config", "key", "arg", "allowed", "allowed-when", "setup"} {
		if fl := c.Flags().Lookup(name); fl != nil && fl.Changed {
			return true
		}
	}
	return false
}

// load checks how the flags combine, reads the --script files and the
// --config files (before any Redis is opened) and checks every template
// and predicate (targets.Load); with progress, when no flag names a
// target, it loads the default file (targets.LoadDefault).
func (t *targetFlags) load(c *cobra.Command, progress io.Writer) error {
	g := t.g
	if t.script != "" {
		g.Scripts = []string{t.script}
	}
	if c.Flags().Changed("allowed-when") {
		g.AllowedWhen = &t.allowedWhen
	}
	load := targets.Load
	if progress != nil && !t.given(c) {
		load = func(g targets.Given) ([]targets.Spec, error) { return targets.LoadDefault(g, progress) }
	}
	specs, err := load(g)
	if name, _ := field.Name(err); name == "exec" && len(g.Scripts) > 0 {
		return usagef("--exec and --script: %w", errors.Unwrap(err)) // about both flags
	}
	if errors.Is(err, targets.ErrTargetCount) {
		if c.Flags().Lookup("function") != nil {
			return usagef("--algorithm, --script, --function, --http, --exec or --config: %w", err) // about all six flags
		}
		return usagef("--algorithm, --script, --http or --config: %w", err) // about all four flags
	}
	if err != nil {
		return targetErr(err)
	}
	t.specs = specs
	return nil
}

// targets returns the loaded targets (run, capacity, bench), their scripts
// on the guarded connection once there is one, their errors naming flags.
func (t *targetFlags) targets() []targets.Target { return t.guarded.Targets(t.specs, targetErr) }

// targetErr names the flag of a targets error: a function library given
// as --script as --function, a target file's field as "--config FILE:
// FIELD: ...", else the flag of the field.
func targetErr(err error) error {
	if le := new(targets.LibraryError); errors.As(err, &le) {
		return usagef("--script %s is a function library (#!lua name=%s), loaded with FUNCTION LOAD and called with FCALL, not a script for EVAL: give it as --function %s --fcall NAME (function: and fcall: in a target file); it registers: %s",
			le.Path, le.Library, le.Path, le.List())
	}
	var se *targets.SpecError
	if errors.As(err, &se) {
		if name, ok := field.Name(se.Err); ok && se.Spec.From != "" && (se.Spec.Script != "" || se.Spec.Exec != "") {
			if name == "function" && se.Spec.FCall != "" {
				return usagef("--config %s: %w", se.Spec.From, errors.Unwrap(se.Err)) // names the library and its line
			}
			return usagef("--config %s: %s: %w", se.Spec.From, name, errors.Unwrap(se.Err))
		}
		err = se.Err
	}
	return flagError(nil, err)
}

// scriptError is the error err of the script at path (its rows' name
// name) under its flag (--script, or --function for a function library):
// "--script PATH: ...", or "--script PATH:LINE: ..." when err starts with
// the script's position ("name:line: ..."), so that the script is named
// once. A script stopped for running past its call's bound says which
// flag sets the bound.
func scriptError(flag, path, name string, err error) error {
	msg := err.Error()
	if se := new(clientside.StoppedError); errors.As(err, &se) && errors.Is(se.Cause, context.DeadlineExceeded) {
		msg += " (--timeout sets the bound)"
	}
	if rest, ok := strings.CutPrefix(msg, name+":"); ok && name != "" {
		return usageError{&reworded{flag + " " + path + ":" + rest, err}}
	}
	return usageError{&reworded{flag + " " + path + ": " + msg, err}}
}

// reworded is err with the message msg.
type reworded struct {
	msg string
	err error
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }

// atomicOnly refuses client-side targets in command (capacity, bench:
// targets.AtomicOnly), naming the flag of c or the target file.
func (t *targetFlags) atomicOnly(c *cobra.Command, command string, algs []string) error {
	err := targets.AtomicOnly(command, t.specs, t.g.ClientSide, algs)
	if errors.As(err, new(*targets.SpecError)) {
		return targetErr(err)
	}
	return flagError(c.Flags(), err) // --client-side, --algorithms
}

// launch is launch.Start of cfg with t's scripts (t nil: none) unless
// --trust-script, saying on stderr how they run. Errors are usage errors
// naming the flag (openError).
func (t *targetFlags) launch(c *cobra.Command, cfg launch.Config, stderr io.Writer) (*launch.Launch, error) {
	if t != nil {
		cfg.Specs, cfg.Trust = t.specs, t.trust
	}
	cfg.Guarded = tellGuard(stderr)
	l, err := launch.Start(c.Context(), cfg, stderr)
	if err != nil {
		return nil, openError(err)
	}
	if t != nil && l.Scripts != nil {
		t.guarded = *l.Scripts
	}
	return l, nil
}

// tellGuard says on stderr how the user's scripts run (guard.Mode), once
// the guard is in place.
func tellGuard(stderr io.Writer) func(guard.Mode) {
	return func(m guard.Mode) {
		switch m {
		case guard.Trusted:
			fmt.Fprintln(stderr, "ratelab: --trust-script: your script runs with your connection's rights on your Redis")
		case guard.Guarded:
			fmt.Fprintln(stderr, "ratelab: your script runs as a temporary ACL user that may touch only this run's keys (--trust-script to lift it)")
		}
	}
}

// openError names the flag of an error opening what a command works with
// (launch.Start, verifyprep.Plan.Open): the Redis (--redis, as
// redisFlags.open named it), a script the guard refused or that cannot
// be built (--script, --config) or guarded, else the field's flag.
func openError(err error) error {
	var refused *guard.RefusedError
	switch name, _ := field.Name(err); {
	case errors.As(err, new(usageError)): // --redis, as redisFlags.open named it
		return err
	case errors.As(err, &refused):
		return usagef("--script %s: %w", refused.Name, errors.Unwrap(refused.Err))
	case errors.As(err, new(*targets.SpecError)): // a script that cannot be built, or does not compile
		return targetErr(err)
	case name == "script":
		return usagef("%w; run it against a throwaway Redis (--redis exec) or pass --trust-script", flagError(nil, err))
	case err != nil:
		return flagError(nil, err)
	}
	return nil
}
