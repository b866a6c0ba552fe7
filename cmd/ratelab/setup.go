package main

import (
	"fmt"
	"io"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/spf13/cobra"
)

// commonFlags are the flags of every command that talks to Redis and
// writes results: the Redis flags with --allow-eviction, --format, --out and --force.
type commonFlags struct {
	redis  redisFlags
	format formatFlag
	out    outFlags
}

// addCommon declares them on c: --out with usage, --force replacing an
// earlier what, --format taking formats (every one when none).
func (f *commonFlags) addCommon(c *cobra.Command, usage, what string, formats ...reports.Format) {
	f.redis.add(c)
	f.redis.addEviction(c)
	f.format.add(c, formats...)
	f.out.add(c, usage, what)
}

// outFlags are --out and --force: where a command writes its results.
type outFlags struct {
	dir   string
	force bool
	// decisions is --decisions: the decision file, or "" for none.
	decisions string
}

// add declares --out (usage) and --force, which replaces the results of an
// earlier what.
func (o *outFlags) add(c *cobra.Command, usage, what string) {
	c.Flags().StringVar(&o.dir, "out", "", usage)
	c.Flags().BoolVar(&o.force, "force", false, "replace the results of an earlier "+what+" in --out")
}

// addDecisions declares --decisions: where every decision is written, if
// anywhere (reports.CreateDecisionFile).
func (o *outFlags) addDecisions(c *cobra.Command) {
	c.Flags().StringVar(&o.decisions, "decisions", "", "also write every decision to this file (none by default): JSON lines if its name ends .jsonl, "+
		"else ratelab's compact text; a name ending .gz or .zst compresses it (a replay's compact .zst: ~4 B per decision, against ~280 B as JSON lines)")
}

// start gets a command its results directory and its Redis, in the
// order that loses nothing: --out is checked and made writable
// (reports.PrepareOut) before Redis is opened, so a bad --out stops the
// command before it measures; a directory it created is removed again when
// Redis cannot be opened. It says which Redis on stderr, then guards the
// scripts of t (nil: none; viaLimiter as targetFlags.guard's) and returns
// the Redis to use from then on. undo removes the directory when the
// command ends with nothing in it; done removes the guard and closes the
// Redis.
func (f *commonFlags) start(c *cobra.Command, t *targetFlags, runID string, viaLimiter bool, stderr io.Writer) (rd *server.Redis, dir string, undo, done func(), err error) {
	if dir, undo, err = reports.PrepareOut(f.out.dir, runID, f.out.force); err != nil {
		return nil, "", nil, nil, flagError(nil, err)
	}
	opened, err := f.redis.open(c)
	if err != nil {
		undo()
		return nil, "", nil, nil, err
	}
	fmt.Fprintf(stderr, "ratelab: Redis %s at %s (%s)\n", opened.Info.Version, opened.Info.Addr, opened.Info.Mode)
	rd, unguard := opened, func() {}
	if t != nil {
		if rd, unguard, err = t.guard(c.Context(), opened, runID, viaLimiter, stderr); err != nil {
			closeRedis(opened, stderr)
			return nil, "", nil, nil, err
		}
	}
	return rd, dir, undo, func() { unguard(); closeRedis(opened, stderr) }, nil
}

// logDecisions streams the decisions of run to the decision file
// --decisions (reports.CreateDecisionFile; none when it is "": run gets a
// nil log) and closes it; an error closing it is run's error when run had
// none.
func (o outFlags) logDecisions(run func(log *measure.DecisionLog) error) error {
	if o.decisions == "" {
		return run(nil)
	}
	log, err := reports.CreateDecisionFile(o.decisions)
	if err != nil {
		return flagError(nil, err)
	}
	runErr := run(log)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}
