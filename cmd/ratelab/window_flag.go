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
