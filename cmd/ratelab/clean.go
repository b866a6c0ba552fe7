package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/leftovers"
	"github.com/ratelab/ratelab/internal/redact"
)

func newCleanCmd(stdout, stderr io.Writer) *cobra.Command {
	var rf redisFlags
	var yes bool
	var cfg leftovers.CleanConfig
	c := command("clean --redis URL [--run ID] [--yes]", "List (and with --yes remove) keys left behind by ratelab runs that were killed",
		func(c *cobra.Command) error {
			if !strings.Contains(rf.spec, "://") {
				return usagef("--redis: clean needs the URL of the Redis to clean, got %q", rf.spec)
			}
			if err := cfg.Validate(); err != nil {
				return flagError(c.Flags(), err)
			}
			rf.opts.ReadOnly = true // clean's --redis is a URL: no --redis-image
			rd, err := rf.connect(c)
			if err != nil {
				return err
			}
			defer rd.CloseOrSay(stderr)
			live, err := leftovers.Run(c.Context(), rd, cfg, yes, stdout)
			if err != nil {
				return usagef("--redis %s: %w", redact.URL(rf.spec), err)
			}
			if yes && live {
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
