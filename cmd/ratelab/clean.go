package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/harness/engine"
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
			// the ACL users of guards whose run was killed (issue 24 item 4)
			users, err := server.FindGuardUsers(c.Context(), rd.Client, cfg)
			if err != nil {
				return usagef("--redis %s: ACL USERS: %w", server.RedactURL(rf.spec), err)
			}
			if err := cleanUsers(c, stdout, rd, users, yes); err != nil {
				return usagef("--redis %s: %w", server.RedactURL(rf.spec), err)
			}
			if yes { // the temporary directories of --redis cluster runs that were killed
				for _, d := range engine.SweepClusterDirs() {
					fmt.Fprintf(stdout, "removed %s (a killed --redis cluster run's)\n", d)
				}
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

// cleanUsers, with yes, removes the guards' ACL users whose run is over,
// and lists them all on stdout.
func cleanUsers(c *cobra.Command, stdout io.Writer, rd *server.Redis, users []server.GuardUser, yes bool) error {
	var err error
	if yes {
		_, err = server.RemoveGuardUsers(c.Context(), rd.Client, users) // marks those found live since
	}
	for _, u := range users {
		state := "its run is over: remove it with --yes"
		switch {
		case u.Live:
			state = "its run is still running: left alone"
		case yes && err == nil:
			state = "removed"
		}
		fmt.Fprintf(stdout, "ACL user %s (run %s): %s\n", u.Name, u.RunID, state)
	}
	return err
}
