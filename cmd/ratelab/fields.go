package main

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
)

// flagExceptions are the library fields whose flag is not named after them.
var flagExceptions = map[string]string{"targets": "script", "files": "config"}

// flagOf returns the flag of a library field, as a field.Error names it,
// and whether it is that field's own flag: "--" + the name before any
// index, with "_" and "." written "-" ("real_time_max" is --real-time-max,
// "limits[2]" --limits); when the command's flags fs have no such flag but
// its singular, a repeatable flag giving one element a time, the singular
// ("limits" is verify's --limit); the fields of flagExceptions are named
// there ("targets" is --script, and not its own). fs nil means the fields
// of the targets package (targets.Given, a script's config), whose lists
// are all repeatable flags ("keys" is --key, "scripts" --script).
func flagOf(fs *pflag.FlagSet, name string) (string, bool) {
	base, _, _ := strings.Cut(name, "[")
	base = strings.NewReplacer("_", "-", ".", "-").Replace(base)
	if f, ok := flagExceptions[base]; ok {
		return "--" + f, false
	}
	single := strings.TrimSuffix(base, "s")
	if single != base && (fs == nil || fs.Lookup(base) == nil && fs.Lookup(single) != nil) {
		return "--" + single, true
	}
	return "--" + base, true
}

// flagError turns a library error about a field (field.Error) into a usage
// error naming its flag on fs (flagOf): "window: must be ..." is
// "--window: must be ...". Any other error is returned as a usage error
// unchanged; nil stays nil.
func flagError(fs *pflag.FlagSet, err error) error { return fieldError(fs, err, false) }

// requiredError is flagError saying of a flag of its own that was not
// given, whose default is what failed, that it is required (verify's
// --limit and --window have no default).
func requiredError(fs *pflag.FlagSet, err error) error { return fieldError(fs, err, true) }

func fieldError(fs *pflag.FlagSet, err error, required bool) error {
	if err == nil {
		return nil
	}
	var fe *field.Error
	if !errors.As(err, &fe) {
		return usageError{err}
	}
	flag, own := flagOf(fs, fe.Name)
	if required && own && fs.Lookup(flag[2:]) != nil && !fs.Changed(flag[2:]) {
		return usagef("%s: %w (it is required)", flag, fe.Err)
	}
	return usagef("%s: %w", flag, fe.Err)
}

// emptyLists refuses a list flag given with nothing in it (--algorithms
// ”): left out, such a flag means "all", and an empty value saying the
// same would hide a mistake (an unset shell variable). It runs before
// every command (cobra's PersistentPreRunE).
func emptyLists(c *cobra.Command, _ []string) error {
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok && err == nil && len(sv.GetSlice()) == 0 {
			err = usagef("--%s: empty; name at least one, or leave the flag out for its default", f.Name)
		}
	})
	return err
}

// windowVar declares a window flag on fl (limit.WindowValue): like
// DurationVar, with days.
func windowVar(fl *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fl.Var((*limit.WindowValue)(p), name, usage)
	if value == 0 {
		fl.Lookup(name).DefValue = "0" // no "(default 0s)" in the help, as DurationVar
	}
}

// countVar declares a count flag on fl (limit.CountValue): like Int64Var,
// and "1e6" is a million, so "1e18" meets the command's bound instead of
// a parse error.
func countVar(fl *pflag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fl.Var((*limit.CountValue)(p), name, usage)
}
