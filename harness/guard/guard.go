// Package guard protects the user's Redis from the user's scripts
// (ForScript): on a Redis ratelab did not start, the scripts'
// calls run as a temporary ACL user limited to the run's keys, unless the
// user trusts them; before that, each script is tried on a throwaway
// redis-server (Probe), so that one that would keep the user's Redis busy
// is refused before it runs there.
package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// Mode says how the user's scripts run on the command's Redis.
type Mode int

const (
	// Unguarded: no script, or a Redis ratelab started (the scripts may do
	// anything there).
	Unguarded Mode = iota
	// Trusted: on the user's own Redis, trusted by the user: the scripts
	// run with the connection's rights.
	Trusted
	// Guarded: on the user's own Redis, as a temporary ACL user that may
	// touch only the run's keys.
	Guarded
)

// Scripts is the connection the user's scripts run on under guard. The
// nil *Scripts, and the zero Scripts, are no guard: On returns the
// caller's connection and Close does nothing. Safe for concurrent use.
type Scripts struct {
	g      *ACL
	ctx    context.Context // Open's, for Close
	stderr io.Writer
	fns    *Functions // the function targets' libraries (nil: none)
}

// Open guards the scripts among specs on rd for the run runID
// (ForScript; trust lifts the guard; viaLimiter says whether the
// command sends the scripts' calls through the limiter, as run and verify
// do) after Probe tried them. It returns the Redis the command must use
// from then on (rd, or rd seen through the guard, so that pipelined calls
// are guarded too), the guard (nil when none: no script, rd nil, a server
// ratelab started, or trusted) and how the scripts run. The caller closes
// the guard. Errors: ForScript's (field "script" when rd cannot
// guard the script, "redis" when creating the user failed), Compiles' and
// Probe's.
func Open(ctx context.Context, rd *server.Redis, specs []targets.Spec, runID string, trust, viaLimiter bool, stderr io.Writer) (*server.Redis, *Scripts, Mode, error) {
	if !targets.HasScript(specs) || rd == nil {
		return rd, nil, Unguarded, nil
	}
	fns, err := LoadFunctions(ctx, rd.Client, specs, runID)
	if err != nil {
		return nil, nil, Unguarded, err
	}
	g, err := ForScript(ctx, rd, runID, trust, viaLimiter)
	if err == nil && g == nil {
		err = Compiles(ctx, rd.Client, specs)
	}
	if err != nil {
		_ = fns.Delete(ctx)
		return nil, nil, Unguarded, err
	}
	if g == nil {
		mode := Unguarded
		if trust && !server.Started(rd) {
			mode = Trusted
		}
		var s *Scripts
		if fns != nil {
			s = &Scripts{ctx: ctx, stderr: stderr, fns: fns}
		}
		return rd, s, mode, nil
	}
	err = Compiles(ctx, g.Client, specs)
	if err == nil {
		err = Probe(ctx, specs, stderr)
	}
	if err != nil {
		_ = g.Close(ctx) // refused before any call: the user goes with it
		_ = fns.Delete(ctx)
		return nil, nil, Unguarded, err
	}
	return g.Redis(rd), &Scripts{g: g, ctx: ctx, stderr: stderr, fns: fns}, Guarded, nil
}

// On is the connection spec s runs on: the guarded one when s is a script
// under guard, else rdb.
func (s *Scripts) On(rdb redis.Scripter, spec targets.Spec) redis.Scripter {
	if s != nil && s.g != nil && spec.Script != "" {
		return s.g.Client
	}
	return rdb
}

// Name returns spec with the namespace of its function libraries, as
// Open loaded them (Functions.Name): build a function target from it.
// spec unchanged for any other target, or when s is nil.
func (s *Scripts) Name(spec targets.Spec) targets.Spec {
	if s == nil {
		return spec
	}
	return s.fns.Name(spec)
}

// Targets returns the targets of specs (targets.Targets), each script's
// built on its connection (On) as s is when the target is built (a zero
// Scripts set later by the caller guards them), each function target
// with its namespace (Name); wrap, when not nil, is applied to every
// build's error (a caller's naming of them), nil errors left alone.
func (s *Scripts) Targets(specs []targets.Spec, wrap func(error) error) []targets.Target {
	out := targets.Targets(specs)
	for i, spec := range specs {
		build := out[i].New
		out[i].New = func(rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
			b := build
			if spec.FCall != "" {
				b = s.Name(spec).Target().New // named as s is when the target is built
			}
			lim, err := b(s.On(rdb, spec), l)
			if err != nil && wrap != nil {
				return nil, wrap(err)
			}
			return lim, err
		}
	}
	return out
}

// Close removes the temporary ACL user and the function libraries Open
// loaded, within Open's ctx; when that fails, stderr says what may be
// left on the Redis.
func (s *Scripts) Close() {
	if s == nil {
		return
	}
	if err := s.fns.Delete(s.ctx); err != nil {
		fmt.Fprintf(s.stderr, "ratelab: the function libraries of this run may be left on your Redis (ratelab clean removes them): %v\n", err)
	}
	if s.g == nil {
		return
	}
	if err := s.g.Close(s.ctx); err != nil {
		fmt.Fprintf(s.stderr, "ratelab: the script's temporary ACL user may be left on your Redis: %v\n", err)
	}
}

// Compiles loads the scripts among specs (and their set-up scripts) into
// rdb with SCRIPT LOAD, which compiles a script without running it, so that
// one that does not compile is refused before the command's first call
// (rather than a run that skips it on every scenario, or counts its every
// call failed, and goes on). A script that
// Redis refuses is a *targets.SpecError naming the field "script" (or
// "setup") with Redis's message; any other error (Redis unreachable) is
// returned as it is. Client-side scripts run in ratelab's Lua VM, not in
// Redis, and are not loaded.
func Compiles(ctx context.Context, rdb redis.Scripter, specs []targets.Spec) error {
	for _, s := range specs {
		if s.Script == "" || s.ClientSide || s.FCall != "" {
			continue // a function's library was loaded (LoadFunctions)
		}
		for _, src := range []struct{ field, name, source string }{{"script", s.Name, s.Source}, {"setup", s.Setup, s.SetupSource}} {
			if src.source == "" {
				continue
			}
			err := rdb.ScriptLoad(ctx, src.source).Err()
			if err != nil && strings.Contains(err.Error(), "compiling script") {
				return &targets.SpecError{Spec: s, Err: field.Errorf(src.field, "%s does not compile: %w", src.name, err)}
			}
			if err != nil {
				return fmt.Errorf("SCRIPT LOAD of %s: %w", src.name, err)
			}
		}
	}
	return nil
}

// ProbeCalls and ProbeBound: the user's scripts are tried ProbeCalls times
// each on a throwaway redis-server, each call bounded by ProbeBound, before
// they run on the user's Redis (ProbeScript), unless a ProbeConfig says
// otherwise.
const (
	ProbeCalls = 8
	ProbeBound = time.Second
)

// ProbeConfig is how Probe tries a script: Calls calls, each bounded by
// Bound (the throwaway server's busy-reply-threshold too, so a script that
// loops is found within about 2*Bound). Zero fields mean ProbeCalls and
// ProbeBound. A Bound shorter than a call of a correct script takes makes
// Probe kill that script's calls: nothing is refused for it, but nothing
// is tried either.
type ProbeConfig struct {
	Calls int
	Bound time.Duration
}

func (c ProbeConfig) calls() int {
	if c.Calls > 0 {
		return c.Calls
	}
	return ProbeCalls
}

func (c ProbeConfig) bound() time.Duration {
	if c.Bound > 0 {
		return c.Bound
	}
	return ProbeBound
}

// probeEpoch is the virtual instant of the probe's first call, the
// virtual runs' epoch (harness.VirtualEpoch): the probe's calls step 100 ms
// from it.
var probeEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// probeRunID names the function libraries the probe loads on its
// throwaway server.
const probeRunID = "20260101T000000-0000"

// RefusedError is Probe's refusal of the script named Name: Err is the
// field error ("script: ...") saying why.
type RefusedError struct {
	Name string
	Err  error
}

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Probe is ProbeWith the zero ProbeConfig.
func Probe(ctx context.Context, specs []targets.Spec, stderr io.Writer) error {
	return ProbeWith(ctx, specs, ProbeConfig{}, stderr)
}

// ProbeWith tries the scripts among specs on a throwaway redis-server, as
// cfg says: one that writes and then runs past cfg.Bound would leave the
// user's Redis answering BUSY to everyone (SCRIPT KILL cannot stop it), so
// it is refused with a *RefusedError. A script that cannot be built for the
// probe's limit is a *targets.SpecError. Without redis-server on PATH, or
// when the throwaway server fails, nothing is refused, and stderr says so.
func ProbeWith(ctx context.Context, specs []targets.Spec, cfg ProbeConfig, stderr io.Writer) error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(stderr, "ratelab: redis-server is not on PATH: your script is not tried on a throwaway Redis first")
		return nil
	}
	server.QuietLogs()
	p, err := localredis.Start(ctx, localredis.StartTimeout, server.DefaultConnectTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "ratelab: your script is not tried on a throwaway Redis first: %v\n", err)
		return nil
	}
	defer func() { _ = p.Close() }() // ratelab's throwaway server
	l := limit.Limit{Count: 10, Window: time.Second}
	fns, err := LoadFunctions(ctx, p.Client, specs, probeRunID)
	if err != nil {
		return err
	}
	for _, s := range specs {
		if s.Script == "" {
			continue
		}
		lim, err := fns.Name(s).Build(p.Client, l)
		if err != nil {
			return &targets.SpecError{Spec: s, Err: err}
		}
		seq := 0
		var stopped error // a client-side script's Lua ran past the bound: it would again
		_, err = ProbeScript(ctx, p, cfg.calls(), cfg.bound(), func(ctx context.Context, _ redis.UniversalClient) error {
			if stopped != nil {
				return stopped
			}
			seq++
			_, err := lim.Allow(ctx, "ratelab:probe:{k"+strconv.Itoa(seq%3)+"}", 1, algorithms.At(probeEpoch.Add(time.Duration(seq)*100*time.Millisecond)))
			if errors.Is(err, clientside.ErrStopped) {
				stopped = err
			}
			return err
		})
		if name, _ := field.Name(err); name == "script" {
			return &RefusedError{Name: s.Name, Err: err}
		}
		if err != nil {
			fmt.Fprintf(stderr, "ratelab: your script could not be tried on a throwaway Redis: %v\n", err)
		}
	}
	return nil
}
