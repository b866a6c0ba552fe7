package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/launch"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/publish"
	"github.com/ratelab/ratelab/reports"
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
	flags     *pflag.FlagSet // the command's, which its errors name (addDecisions)
}

// add declares --out (usage) and --force, which replaces the results of an
// earlier what.
func (o *outFlags) add(c *cobra.Command, usage, what string) {
	c.Flags().StringVar(&o.dir, "out", "", usage)
	c.Flags().BoolVar(&o.force, "force", false, "replace the results of an earlier "+what+" in --out")
}

// addDecisions declares --decisions: where every decision is written, if
// anywhere (publish.CreateDecisionFile).
func (o *outFlags) addDecisions(c *cobra.Command) {
	o.flags = c.Flags()
	c.Flags().StringVar(&o.decisions, "decisions", "", "also write every decision to this file (none by default): JSON lines if its name ends .jsonl, "+
		"else ratelab's compact text; a name ending .gz or .zst compresses it (a replay's compact .zst: ~4 B per decision, against ~280 B as JSON lines)")
}

// start opens a command's results directory, its Redis and the guard of
// t's scripts (nil: none; viaLimiter as guard.Open's): launch.Start, its
// errors naming flags (targetFlags.launch).
func (f *commonFlags) start(c *cobra.Command, t *targetFlags, runID string, viaLimiter bool, stderr io.Writer) (*launch.Launch, error) {
	open := func(context.Context) (*server.Redis, error) { return f.redis.open(c) }
	return t.launch(c, launch.Config{RunID: runID, Results: true, Out: f.out.dir, Force: f.out.force, Open: open, Announce: true, ViaLimiter: viaLimiter}, stderr)
}

// logDecisions runs run with the decision log of --decisions
// (publish.CreateDecisionFile; nil when none) and closes the log: the
// error is run's, else the one closing the log, or a file that cannot be
// made (naming --decisions; run is then not called).
func (o outFlags) logDecisions(run func(log *measure.DecisionLog) error) error {
	if o.decisions == "" {
		return run(nil)
	}
	log, err := publish.CreateDecisionFile(o.decisions)
	if err != nil {
		return flagError(o.flags, err)
	}
	runErr := run(log)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// redisFlags are the flags every command that talks to Redis shares.
// opts holds --connect-timeout, --redis-image, --redis-ca (CAFile) and
// --allow-eviction (addEviction).
type redisFlags struct {
	spec string
	opts engine.Options
}

// addEviction adds --allow-eviction, for the commands that write keys.
func (f *redisFlags) addEviction(c *cobra.Command) {
	c.Flags().BoolVar(&f.opts.AllowEviction, "allow-eviction", false,
		"run on a Redis given by URL that may evict keys to make room (maxmemory with an allkeys-* or volatile-* policy): "+
			"warn instead of refusing (exit 2) when this command may write more than its headroom, and do not stop when it evicts")
}

func (f *redisFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.spec, "redis", "auto",
		"where Redis is: auto (exec when redis-server is on PATH, else container when Docker answers), "+
			"exec (a throwaway redis-server), container (a throwaway Redis container), cluster (a throwaway local 3-master Redis Cluster), "+
			"a redis:// or rediss:// (TLS) URL, [user:password@ for ACL users], "+
			"or a redis+cluster://host:port,host:port URL of your Redis Cluster (rediss+cluster:// for TLS)")
	c.Flags().DurationVar(&f.opts.Timeout, "connect-timeout", engine.DefaultConnectTimeout, "how long to wait for Redis to answer")
	c.Flags().StringVar(&f.opts.Image, "redis-image", "",
		"container image of --redis container (default $"+engine.ImageEnv+", else "+engine.DefaultImage+"; without a registry: make redis-image, then "+engine.LocalImage+")")
	c.Flags().StringVar(&f.opts.CAFile, "redis-ca", "", "PEM file of the CA(s) that signed the server's certificate, for rediss:// URLs (default: the system's CAs)")
}

// open opens the Redis of --redis, else of the environment
// (redisFromEnv). The caller closes it.
func (f *redisFlags) open(c *cobra.Command) (*server.Redis, error) {
	redisFromEnv(c, &f.spec) // RATELAB_REDIS, REDIS_URL
	return f.connect(c)
}

// connect opens the Redis of --redis (engine.OpenChecked), its errors
// naming the flags.
func (f *redisFlags) connect(c *cobra.Command) (*server.Redis, error) {
	rd, err := engine.OpenChecked(c.Context(), f.spec, f.opts)
	if oe := (*engine.OpenError)(nil); errors.As(err, &oe) {
		return nil, usagef("--redis %s: %w", redact.URL(oe.Spec), oe.Err)
	}
	return rd, flagError(nil, err)
}

// redisFromEnv sets spec, --redis, from RATELAB_REDIS or else REDIS_URL
// when the flag was not given, and says on stderr which variable was used
// (its value with any password hidden). The flag wins over both.
func redisFromEnv(c *cobra.Command, spec *string) {
	v, name := engine.FromEnv()
	if c.Flags().Changed("redis") || v == "" || *spec == v { // the flag wins; or said for an earlier target
		return
	}
	*spec = v
	fmt.Fprintf(c.ErrOrStderr(), "ratelab: --redis from $%s: %s\n", name, redact.URL(v))
}

// formatFlag is a command's --format and --wide (reports.Choice). Every
// command declares it with add, which checks it before the command runs
// (cobra's PreRunE), so the check is made once, here.
type formatFlag struct{ reports.Choice }

// add declares --format on c (default table), taking allowed (every
// reports.Format when none).
func (f *formatFlag) add(c *cobra.Command, allowed ...reports.Format) {
	if len(allowed) == 0 {
		allowed = reports.Formats
	}
	f.Allowed = allowed
	c.Flags().StringVar((*string)(&f.Format), "format", string(reports.Table), "what to print on stdout: "+reports.FormatList(allowed))
	c.Flags().BoolVar(&f.Wide, "wide", false, "tables with every column, however wide (by default they fit 100 columns)")
	c.PreRunE = func(*cobra.Command, []string) error { return flagError(nil, f.Check()) }
}
