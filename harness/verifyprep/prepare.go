package verifyprep

import (
	"context"
	"io"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/targets"
)

// Guard is how Open runs the target's script on the Redis (guard.Open,
// its calls sent through the limiter).
type Guard struct {
	// Trust lifts the guard on a Redis ratelab did not start: the script
	// runs with the connection's rights.
	Trust bool
	// Told, when not nil, is told how the script runs (guard.Mode) once
	// the guard is in place, before the limiter is built.
	Told func(guard.Mode)
	// Progress gets the guard's and the probe's notes; nil discards them.
	Progress io.Writer
}

// Prepared is a Plan ready to run: Config is the Plan's with a new run
// id (server.NewRunID), Redis the Redis to use (the caller's, seen
// through the guard when the script is guarded; nil for an HTTP target),
// Limiter the target's limiter built on it for Config's limits, and Mode
// how its script runs. Close it when the verification ends; it is not
// safe for concurrent use (Redis and Limiter are).
type Prepared struct {
	Config  verify.Config
	Spec    targets.Spec
	Redis   *server.Redis
	Limiter algorithms.Limiter
	Mode    guard.Mode

	scripts *guard.Scripts
}

// Prepare is the preparation of one target's verification, for `ratelab
// verify` and ratelabtest alike: Check, then Open on rd. A caller that
// opens rd only once the plan is checked calls the two itself.
func Prepare(ctx context.Context, rd *server.Redis, cfg verify.Config, spec targets.Spec, ls Limits, g Guard) (*Prepared, error) {
	p, err := Check(cfg, spec, ls)
	if err != nil {
		return nil, err
	}
	return p.Open(ctx, rd, g)
}

// Open prepares p on rd (nil for an HTTP target), in order: a new run id;
// the script compiled (SCRIPT LOAD), tried on a throwaway redis-server
// and guarded on a Redis ratelab did not start (guard.Open, g); the
// limiter built for p's limits (targets.Spec.Build), on the guarded
// connection. The caller keeps rd and closes it after the Prepared. On an
// error nothing is left guarded and Open returns nil with guard.Open's
// error (a *guard.RefusedError for a script the probe refused; a
// *field.Error naming "script" when rd cannot guard it; a
// *targets.SpecError for one that does not compile) or the build's, a
// *targets.SpecError.
func (p Plan) Open(ctx context.Context, rd *server.Redis, g Guard) (*Prepared, error) {
	cfg := p.Config
	cfg.RunID = server.NewRunID()
	progress := g.Progress
	if progress == nil {
		progress = io.Discard
	}
	on, scripts, mode, err := guard.Open(ctx, rd, []targets.Spec{p.Spec}, cfg.RunID, g.Trust, true, progress)
	if err != nil {
		return nil, err
	}
	if g.Told != nil {
		g.Told(mode)
	}
	var rdb redis.Scripter
	if on != nil {
		rdb = on.Client
	}
	lim, err := scripts.Name(p.Spec).Build(scripts.On(rdb, p.Spec), cfg.Limits...)
	if err != nil {
		scripts.Close()
		return nil, &targets.SpecError{Spec: p.Spec, Err: err}
	}
	return &Prepared{Config: cfg, Spec: p.Spec, Redis: on, Limiter: lim, Mode: mode, scripts: scripts}, nil
}

// Close closes the Limiter when it holds what must go with it
// (io.Closer: an exec target's processes, a Go function's endpoint, and
// the keys their endpoint wrote) and removes the guard of the script (its
// temporary ACL user), if any; the caller closes the Redis. The error is
// the Limiter's Close's (keys it could not remove). Safe to call twice.
func (p *Prepared) Close() error {
	var err error
	if c, ok := p.Limiter.(io.Closer); ok {
		err = c.Close()
		p.Limiter = nil
	}
	p.scripts.Close()
	p.scripts = nil
	return err
}
