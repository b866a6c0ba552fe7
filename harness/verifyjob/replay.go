package verifyjob

import (
	"errors"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
)

// ErrNothingToReplay is ReadReplay's error for a verify.json whose
// verification holds, or whose counter-example has no trace.
var ErrNothingToReplay = errors.New("nothing to replay")

// ReadReplay reads the verify.json at path for its counter-example to be
// sent again (verify.Replay): a record whose counter-example has a trace.
// Errors: measure.ReadVerify's, naming path; ErrNothingToReplay, wrapped
// with the reason, when there is nothing to send.
func ReadReplay(path string) (*measure.VerifyReport, error) {
	rec, err := measure.ReadVerify(path)
	if err != nil {
		return nil, err
	}
	if ce := rec.CounterExample; ce == nil || ce.Trace == nil {
		why := "it holds"
		if ce != nil {
			why = "its counter-example has no trace (found in real time, or by an older ratelab)"
		}
		return nil, fmt.Errorf("%w: %s", ErrNothingToReplay, why)
	}
	return rec, nil
}

// ReplayConfig is cfg with the limits and the seed rec records (an older
// record's one limit when it has no list), no defaults, checked
// (verify.Config.Validate, whose errors it returns).
func ReplayConfig(rec *measure.VerifyReport, cfg verify.Config) (verify.Config, error) {
	cfg.Limits = rec.Repro.Limits
	if len(cfg.Limits) == 0 {
		cfg.Limits = []limit.Limit{{Count: rec.Limit, Window: time.Duration(rec.WindowMS) * time.Millisecond}}
	}
	cfg.Seed, cfg.NoDefaults = rec.Repro.Seed, true
	return cfg, cfg.Validate()
}
