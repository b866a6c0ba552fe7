package verifyjob

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
	// file's: targets.Spec.LimitsOr).
	Given []limit.Limit
	Gave  bool
	// Window is the caller's window when no limit is given at all: the
	// limit then is the zero count over it, which verify.Config.Validate
	// refuses as missing.
	Window time.Duration
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

// TargetConfig returns cfg set for verifying spec, the one target, for
// ls: the target's digest, its limits, NoDefaults (a zero Timeout,
// MaxOutage or Clients is refused), and a Budget of 0 meaning no search
// (-1). It checks the result before any Redis is opened: cfg.Validate,
// then whether spec can be built for all the limits at once
// (targets.Spec.CheckLimits). Errors are field errors (field.Error); an
// error of limits that came from spec's target file is a *FileError
// wrapping it. The returned Config is cfg as set so far on error too.
func TargetConfig(cfg verify.Config, spec targets.Spec, ls Limits) (verify.Config, error) {
	cfg.TargetSHA256 = spec.Digest()
	limits, fromFile := spec.LimitsOr(ls.Given, ls.Gave)
	if len(limits) == 0 {
		limits = []limit.Limit{{Window: ls.Window}} // no count: Validate says it is required
	}
	limits[0].Precision = ls.Precision
	cfg.Limits = limits
	cfg.NoDefaults = true
	if cfg.Budget == 0 {
		cfg.Budget = -1 // no search
	}
	if err := cfg.Validate(); err != nil {
		if name, _ := field.Name(err); fromFile && isLimitField(name) {
			return cfg, &FileError{File: spec.From, Err: err}
		}
		return cfg, err
	}
	if err := spec.CheckLimits(cfg.Limits); err != nil {
		if fromFile {
			return cfg, &FileError{File: spec.From, Err: err}
		}
		return cfg, err
	}
	return cfg, nil
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
