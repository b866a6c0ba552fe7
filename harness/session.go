package harness

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ratelab/ratelab/harness/evict"
	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/version"
	"github.com/ratelab/ratelab/measure"
)

// Session is the life of one command against one Redis: its run id and key
// prefix, when it started, the removal of its keys at the end (also after
// Ctrl-C, bounded by one timeout rule), and how it ended. run, demo, bench,
// capacity and verify each open one. A Session is not safe for concurrent
// use; the Redis it holds is.
type Session struct {
	// Redis is where the command runs.
	Redis *server.Redis
	// RunID names the session; Prefix is "ratelab:<RunID>:", the prefix of
	// every key the command writes.
	RunID  string
	Prefix string
	// Timeout is the command's bound on one call (zero: none); it sets the
	// cleanup bound (CleanupTimeout).
	Timeout time.Duration
	// Started is the wall-clock start, UTC.
	Started time.Time
	// Heartbeat is how often Start's registration refreshes its marker and
	// for how long it lives; zero is leftovers' default (1 s, 5 s).
	Heartbeat leftovers.Heartbeat
	// Evict is the eviction watch's timing (Guard); zero reads every 25 ms.
	Evict evict.Config
	// EnvEvery is how often Guard's watch looks at whether the Redis is
	// still the one the command started on; zero means every 200 ms
	// (leftovers.DefaultEnvEvery).
	EnvEvery time.Duration
	// reg is the run's registration (Start), nil before.
	reg *leftovers.Registration
}

// Start registers the run in its Redis (leftovers.Register: a marker
// "ratelab:<RunID>:~alive" refreshed every Heartbeat.Every, so that `ratelab clean`
// skips the live run, and a record "ratelab:<RunID>:~run") until
// RemoveKeys(ctx, "") or Stop, or until ctx ends. Call it once, before the
// command writes its first key. Errors: the writes failed.
func (s *Session) Start(ctx context.Context) error {
	reg, err := leftovers.Register(ctx, s.Redis.Client, s.RunID, s.Heartbeat)
	s.reg = reg
	return err
}

// Stop ends Start's refreshing (also done by RemoveKeys(ctx, "")); the
// marker then expires within Heartbeat.TTL. Safe to call twice or
// without Start.
func (s *Session) Stop() { s.reg.Stop() }

// Vanished reports whether the run's marker disappeared while it ran:
// someone removed the run's keys or the Redis lost its data, and the
// run's figures are not to be trusted. False without Start.
func (s *Session) Vanished() bool { return s.reg.Vanished() }

// NewSession opens a session on rd. An empty runID picks a fresh one
// (server.NewRunID); timeout is the command's per-call bound (zero: none).
func NewSession(rd *server.Redis, runID string, timeout time.Duration) *Session {
	if runID == "" {
		runID = server.NewRunID()
	}
	return &Session{Redis: rd, RunID: runID, Prefix: server.KeyPrefix + runID + ":",
		Timeout: timeout, Started: time.Now().UTC()}
}

// CleanupTimeout bounds the work after a run (reading memory, removing
// keys): a few round trips, so a Redis that hangs cannot hold the command
// for long. It is max(2 x Timeout, 1 s), or 5 s without a Timeout.
func (s *Session) CleanupTimeout() time.Duration { return cleanupTimeout(s.Timeout) }

func cleanupTimeout(callTimeout time.Duration) time.Duration {
	if callTimeout > 0 {
		return max(2*callTimeout, time.Second)
	}
	return 5 * time.Second
}

// CleanupContext is a context for work after the command's own context
// ended (Ctrl-C, an outage): not cancelled with ctx, bounded by
// CleanupTimeout.
func (s *Session) CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return server.CleanupContext(ctx, s.CleanupTimeout())
}

// RemoveKeys removes every key under prefix (the session's own Prefix
// when empty, which also Stops the registration and removes it last),
// also after ctx was cancelled: Redis must answer a PING within
// CleanupTimeout (a Redis that hangs cannot hold the command), then the
// removal has up to 2 minutes (a replay can leave millions of keys).
// Errors are returned, not fatal: what is left can be removed later with
// `ratelab clean`.
func (s *Session) RemoveKeys(ctx context.Context, prefix string) error {
	if prefix == "" || prefix == s.Prefix {
		prefix = s.Prefix
		s.Stop()
	}
	// one round trip within the cleanup bound proves Redis answers; then
	// the removal may take as long as the keys need (10^6 keys: seconds)
	pctx, cancel := s.CleanupContext(ctx)
	err := s.Redis.Client.Ping(pctx).Err()
	cancel()
	if err != nil {
		return err
	}
	cctx, cancel := server.CleanupContext(ctx, max(s.CleanupTimeout(), 2*time.Minute))
	defer cancel()
	keys, err := server.ScanKeys(cctx, s.Redis.Client, prefix)
	if err != nil {
		return err
	}
	return server.DeleteKeys(cctx, s.Redis.Client, keys)
}

// End says how the command ended: its wall time since Started in ms,
// whether it completed (err == nil) and err's text ("" when nil), the
// three fields every results.json carries.
func (s *Session) End(err error) (durationMS int64, complete bool, errText string) {
	if err != nil {
		errText = err.Error()
	}
	return time.Since(s.Started).Milliseconds(), err == nil, errText
}

// RemoveKeysOrSay removes the session's keys (RemoveKeys) and, when that
// fails (Redis gone or hanging after an outage), tells w which keys are
// left and the command that removes them later, so nothing is left behind
// silently. On a server ratelab started (Redis.Owned) the keys go with the
// server when the command ends: nothing to advise. A nil w says nothing.
func (s *Session) RemoveKeysOrSay(ctx context.Context, w io.Writer) {
	err := s.RemoveKeys(ctx, "")
	if ce := server.Cause(err); ce != nil {
		err = fmt.Errorf("%s: %w", ce.Label(), err)
	}
	switch {
	case err == nil || w == nil:
	case s.Redis.Owned():
		fmt.Fprintf(w, "ratelab: this run's keys could not be removed (%v); they go with the throwaway Redis ratelab started, stopped now\n", err)
	default:
		fmt.Fprintf(w, "ratelab: this run's keys (%s*) may be left in Redis at %s (%v); they expire with their TTLs, or remove them now with: ratelab clean --redis <the same --redis URL> --run %s --yes\n",
			s.Prefix, s.Redis.Info.Addr, err, s.RunID)
	}
}

// Header returns the Header of a result of command ("run", "verify", ...)
// made in this session: schema and tool version, command, run id, Redis
// (empty for a session without one, such as verify --http), start, and
// repro, the configuration that reproduces it. Complete is false until the
// command sets DurationMS, Complete and Error from End when it ends.
func (s *Session) Header(command string, repro measure.Repro) measure.Header {
	h := measure.Header{SchemaVersion: measure.SchemaVersion, Tool: "ratelab", ToolVersion: version.String(),
		Command: command, RunID: s.RunID, StartedAt: s.Started, Repro: repro}
	if s.Redis != nil {
		h.Redis = s.Redis.Info
	}
	return h
}

// watchEnv watches the session's Redis (leftovers.EnvCheck.Watch, every
// EnvEvery) until stop, and calls fire with the *server.EnvError of a
// change. A Redis whose run_ids cannot be read is not watched: the
// command's own calls meet the same outage.
func (s *Session) watchEnv(ctx context.Context, fire func(error)) (stop func()) {
	cctx, cancel := s.CleanupContext(ctx)
	env, err := leftovers.NewEnvCheck(cctx, s.Redis.Client, s.reg)
	cancel()
	if err != nil {
		return func() {}
	}
	return env.Watch(ctx, leftovers.WatchConfig{Every: s.EnvEvery, Last: s.CleanupTimeout()}, fire)
}

// ExplainWait bounds Session.Explain's look at the server.
const ExplainWait = 500 * time.Millisecond

// Explain returns err with the server state that caused it named first
// (server.Explain: out of memory, a read-only replica, the connection
// closed by the server), looking at the server for at most ExplainWait
// (also after ctx was cancelled); err unchanged when no such state is
// found, nil for nil.
func (s *Session) Explain(ctx context.Context, err error) error { return Explain(ctx, s.Redis, err) }

// Explain is Session.Explain for a command on rd (nil: err unchanged).
func Explain(ctx context.Context, rd *server.Redis, err error) error {
	if err == nil || rd == nil {
		return err
	}
	cctx, cancel := server.CleanupContext(ctx, ExplainWait)
	defer cancel()
	return server.Explain(cctx, rd.Client, err)
}
