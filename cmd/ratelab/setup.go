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

// openOut gets a command its results directory and its Redis, in the
// order that loses nothing: --out is checked and made writable
// (reports.PrepareOut) before Redis is opened, so a bad --out stops the
// command before it measures; a directory it created is removed again when
// Redis cannot be opened. The caller closes the Redis; undo removes the
// directory when the command ends with nothing in it.
func openOut(c *cobra.Command, rf *redisFlags, out outFlags, runID string, stderr io.Writer) (rd *server.Redis, dir string, undo func(), err error) {
	if dir, undo, err = reports.PrepareOut(out.dir, runID, out.force); err != nil {
		return nil, "", nil, flagError(nil, err)
	}
	if rd, err = openRedis(c, rf, stderr); err != nil {
		undo()
		return nil, "", nil, err
	}
	return rd, dir, undo, nil
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

// openRedis opens the Redis of rf and says which one on stderr. The caller
// closes it.
func openRedis(c *cobra.Command, rf *redisFlags, stderr io.Writer) (*server.Redis, error) {
	rd, err := rf.open(c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "ratelab: Redis %s at %s (%s)\n", rd.Info.Version, rd.Info.Addr, rd.Info.Mode)
	return rd, nil
}
