package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/ratelab/ratelab/limit"
)

// windowValue is a duration flag read by limit.ParseDuration (so "1d" and
// "7d" are windows too) and shown by limit.FormatWindow ("1h", not 1h0m0s).
type windowValue time.Duration

func (w *windowValue) Set(s string) error {
	d, err := limit.ParseDuration(s)
	if err != nil {
		return err
	}
	*w = windowValue(d)
	return nil
}

func (w *windowValue) String() string { return limit.FormatWindow(time.Duration(*w)) }

func (w *windowValue) Type() string { return "duration" }

// windowVar declares a window flag on fl: like DurationVar, with days.
func windowVar(fl *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fl.Var((*windowValue)(p), name, usage)
	if value == 0 {
		fl.Lookup(name).DefValue = "0" // no "(default 0s)" in the help, as DurationVar
	}
}
