// Package launch opens what run, capacity, bench and demo work with, in
// the order that loses nothing: the results directory first (a bad one
// stops the command before anything is measured), then the Redis, then
// the guard of the user's scripts on it (guard.Open). Whatever it opened
// is undone again when a later step fails. One target's verification is
// prepared by verifyprep instead.
package launch

import (
	"context"
	"fmt"
	"io"

	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/targets"
)

// Config says what Start opens. The zero Config opens nothing.
type Config struct {
	// RunID is the command's run id (server.NewRunID): the default name of
	// the results directory and the guard's ACL user.
	RunID string
	// Results says whether to prepare the results directory Out
	// (outdir.Prepare with Force; Out "" is results/<RunID>). False:
	// no directory (verify checks and creates its own).
	Results bool
	Out     string
	Force   bool
	// Open opens the command's Redis; the Launch closes it. Nil: no Redis
	// (an HTTP target), and nothing is guarded.
	Open func(ctx context.Context) (*server.Redis, error)
	// Announce says on progress which Redis was opened:
	// "ratelab: Redis <version> at <addr> (<mode>)".
	Announce bool
	// Specs are the targets whose scripts are guarded (nil: none); Trust
	// and ViaLimiter are guard.Open's.
	Specs      []targets.Spec
	Trust      bool
	ViaLimiter bool
	// Guarded, when not nil, is told how the scripts run (guard.Mode) once
	// the guard is in place.
	Guarded func(guard.Mode)
}

// Launch is what Start opened. Close it when the command ends; it is not
// safe for concurrent use (the Redis it holds is).
type Launch struct {
	// Redis is the Redis to use: Open's, seen through the guard when the
	// scripts are guarded; nil when Config.Open was nil.
	Redis *server.Redis
	// Dir is the prepared results directory; "" when Config.Results was
	// false.
	Dir string
	// Scripts is the guard of the scripts (nil: none); Mode says how the
	// scripts run (guard.Mode).
	Scripts *guard.Scripts
	Mode    guard.Mode

	opened   *server.Redis
	undo     func()
	progress io.Writer
}

// Start opens what cfg asks for, in order: the results directory, the
// Redis (announced on progress), the guard; notes of the guard and of
// closing go to progress. On an error it undoes what it opened (the
// directory it created is removed) and returns nil with the error:
// outdir.Prepare's (*field.Error naming "out"), cfg.Open's unchanged, or
// guard.Open's.
func Start(ctx context.Context, cfg Config, progress io.Writer) (*Launch, error) {
	l := &Launch{undo: func() {}, progress: progress}
	if cfg.Results {
		var err error
		if l.Dir, l.undo, err = outdir.Prepare(cfg.Out, cfg.RunID, cfg.Force); err != nil {
			return nil, err
		}
	}
	if cfg.Open != nil {
		var err error
		if l.opened, err = cfg.Open(ctx); err != nil {
			l.undo()
			return nil, err
		}
		if cfg.Announce {
			i := l.opened.Info
			fmt.Fprintf(progress, "ratelab: Redis %s at %s (%s)\n", i.Version, i.Addr, i.Mode)
		}
	}
	var err error
	l.Redis, l.Scripts, l.Mode, err = guard.Open(ctx, l.opened, cfg.Specs, cfg.RunID, cfg.Trust, cfg.ViaLimiter, progress)
	if err == nil && cfg.Guarded != nil {
		cfg.Guarded(l.Mode)
	}
	if err != nil {
		l.Close()
		l.undo()
		return nil, err
	}
	return l, nil
}

// Undo removes the results directory when the command stopped before it
// wrote anything there (outdir.Prepare's undo); nothing without one.
func (l *Launch) Undo() { l.undo() }

// Close removes the guard (guard.Scripts.Close) and closes the Redis
// (server.Redis.CloseOrSay, on progress). Safe to call twice.
func (l *Launch) Close() {
	l.Scripts.Close()
	l.Scripts = nil
	if l.opened != nil {
		l.opened.CloseOrSay(l.progress)
		l.opened = nil
	}
}
