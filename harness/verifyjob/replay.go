package verifyjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/harness/verifyprep"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
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

// ErrHTTPReplay is NewReplay's error for an HTTP endpoint: its answers
// come on its own clock, so a counter-example found in virtual time
// cannot be sent to it again.
var ErrHTTPReplay = errors.New("an HTTP endpoint cannot be replayed in virtual time")

// Replay is a verify.json's counter-example to send again: Record is the
// verify.json (ReadReplay's); the Plan's Spec is the target to send it
// to, its Config the verification's settings (verifyprep.Plan.Open
// prepares it).
type Replay struct {
	Record *measure.VerifyReport
	verifyprep.Plan
}

// NewReplay is the Replay of rec, read from the verify.json at path, to
// spec, or when spec is nil to the target rec records (targets.FromRecord,
// its files found beside path), with cfg's settings and rec's limits and
// seed (ReplayConfig). Errors: FromRecord's, ReplayConfig's, then
// ErrHTTPReplay.
func NewReplay(rec *measure.VerifyReport, path string, spec *targets.Spec, cfg verify.Config) (Replay, error) {
	r := Replay{Record: rec}
	if spec != nil {
		r.Spec = *spec
	} else {
		var err error
		if r.Spec, err = targets.FromRecord(rec.TargetSpec, filepath.Dir(path)); err != nil {
			return r, err
		}
	}
	var err error
	if r.Config, err = ReplayConfig(rec, cfg); err != nil {
		return r, err
	}
	if r.Spec.HTTP != "" {
		return r, ErrHTTPReplay
	}
	return r, nil
}

// Run sends r's counter-example again to p, r's Plan prepared
// (verifyprep.Plan.Open), with p's Config and its progress on progress
// (verify.Replay), and returns the report, which records p's Spec.
// Errors are verify.Replay's.
func (r Replay) Run(ctx context.Context, p *verifyprep.Prepared, progress io.Writer) (*measure.VerifyReport, error) {
	cfg := p.Config
	cfg.Progress = progress
	rep, err := verify.Replay(ctx, p.Redis, p.Limiter, cfg, r.Record.CounterExample)
	if err != nil {
		return nil, err
	}
	rep.TargetSpec = p.Spec.Record()
	return rep, nil
}
