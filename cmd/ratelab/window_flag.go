package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/ratelab/ratelab/limit"
)

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
