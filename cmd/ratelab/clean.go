package main

import (
	"io"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/reports"
	"github.com/spf13/cobra"
)

func newCleanCmd(stdout, stderr io.Writer) *cobra.Command {
	var rf redisFlags
	var yes bool
	var cfg server.CleanConfig
	c := command("clean --redis URL [--run ID] [--yes]", "List (and with --yes remove) keys left behind by ratelab runs that were killed",
		func(c *cobra.Command) error {
			if !strings.Contains(rf.spec, "://") {
				return usagef("--redis: clean needs the URL of the Redis to clean, got %q", rf.spec)
			}
			if err := cfg.Validate(); err != nil {
				return flagError(c.Flags(), err)
			}
			o, err := rf.opts.Check(rf.spec) // clean's --redis is a URL: no --redis-image
			if err != nil {
				return flagError(nil, err)
			}
			rd, err := server.OpenReadOnly(c.Context(), rf.spec, server.Options{Timeout: o.Timeout, RootCAs: o.RootCAs})
			if err != nil {
				return usagef("--redis %s: %w", server.RedactURL(rf.spec), err)
			}
			defer closeRedis(rd, stderr)
			runs, err := server.FindLeftovers(c.Context(), rd.Client, cfg)
			if err != nil {
				return usagef("--redis %s: %w", server.RedactURL(rf.spec), err)
			}
			removed := 0
			if yes {
				removed, err = server.RemoveLeftovers(c.Context(), rd.Client, runs)
				if err != nil {
					return usagef("--redis %s: removed %d keys, then: %w", server.RedactURL(rf.spec), removed, err)
				}
			}
			if err := reports.WriteLeftovers(stdout, runs, yes, removed); err != nil {
				return err
			}
			if yes && cfg.Run != "" && slices.ContainsFunc(runs, func(l server.Leftover) bool { return l.Live }) {
				return usagef("--run: run %s is still running: its keys were not removed", cfg.Run)
			}
			return nil
		})
	rf.add(c)
	c.Flags().Lookup("redis").DefValue = ""
	rf.spec = ""
	c.Flags().BoolVar(&yes, "yes", false, "remove the keys (default: only list them)")
	c.Flags().StringVar(&cfg.Run, "run", "", "only this run id (as in the prefix ratelab:<run id>:); also removes a run that left no record")
	return c
}
