// Package verifyprep prepares one target's verification, for `ratelab
// verify` and ratelabtest alike: its limits resolved (the caller's, or
// the target file's) and checked once before anything is opened (Check),
// then its script compiled, tried on a throwaway redis-server and
// guarded, and its limiter built (Plan.Open); Prepare does both.
package verifyprep

import (
	"strings"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// Limits are the limits a caller gives for one target's verification.
type Limits struct {
	// Given are the caller's limits (the command line's), used unless
	// Gave is false and the target has limits of its own (a target
	// file's: targets.Spec.LimitsOr). No limit at all is refused by Check
	// as missing.
	Given []limit.Limit
	Gave  bool
	// Precision is the first limit's block length (bucketed-hash only);
	// zero means its default.
	Precision time.Duration
}

// FileError is an error in a target file's limits: File is the file
// (targets.Spec.From), Err the field error (field.Error).
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Plan is one target's verification as checked before anything is
// opened: Config holds the target's digest and the limits it is verified
// for, Spec is the target. Check makes one, NewReplay another; Open
// prepares it on a Redis.
type Plan struct {
	Config verify.Config
	Spec   targets.Spec
}

// Check is the Plan of verifying spec, the one target, with cfg for ls:
// cfg with the target's digest and its limits (ls's, or the target
// file's), checked once, before any Redis is opened: the settings and
// the limits' values (verify.Config.Validate), then whether spec can be
// built for all the limits at once (targets.Spec.CheckLimits). Errors are
// field errors (field.Error); an error of limits that came from spec's
// target file is a *FileError wrapping it. The returned Plan is cfg as
// set so far on error too.
func Check(cfg verify.Config, spec targets.Spec, ls Limits) (Plan, error) {
	cfg.TargetSHA256 = spec.Digest()
	limits, fromFile := spec.LimitsOr(ls.Given, ls.Gave)
	if len(limits) > 0 {
		limits[0].Precision = ls.Precision
	}
	cfg.Limits = limits
	p := Plan{Config: cfg, Spec: spec}
	err := cfg.Validate()
	if name, _ := field.Name(err); err != nil && !isLimitField(name) {
		return p, err // a setting, never the file's
	}
	if err == nil {
		err = spec.CheckLimits(cfg.Limits)
	}
	if err != nil && fromFile {
		return p, &FileError{File: spec.From, Err: err}
	}
	return p, err
}

// isLimitField reports whether a field is part of a limit
// (limit.Limit.Validate and lists of limits): "limit", "window",
// "precision", "limits[2]".
func isLimitField(name string) bool {
	base, _, _ := strings.Cut(name, "[")
	switch base {
	case "limit", "limits", "window", "precision":
		return true
	}
	return false
}
