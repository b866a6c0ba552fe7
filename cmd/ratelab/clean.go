package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelab/ratelab/harness/engine"
	"github.com/spf13/cobra"
)

func newCleanCmd(stdout, stderr io.Writer) *cobra.Command {
	var rf redisFlags
	var yes bool
	var run string
	c := &cobra.Command{
		Use:   "clean --redis URL [--run ID] [--yes]",
		Short: "List (and with --yes remove) keys left behind by ratelab runs that were killed",
		Long: `clean finds ratelab's keys in a Redis by SCAN over the "ratelab:" prefix (never
KEYS, never FLUSH), grouped by run. It is a dry run unless --yes is given:
it shows what it would remove. Keys outside "ratelab:" are never touched.`,
		Example: `  ratelab clean --redis redis://localhost:6379
  ratelab clean --redis redis://localhost:6379 --run 20261122T030515-cfab --yes`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !strings.Contains(rf.spec, "://") {
				return usagef("--redis: clean needs the URL of the Redis to clean, got %q", rf.spec)
			}
			rd, err := rf.open(c)
			if err != nil {
				return err
			}
			defer rd.Close()
			runs, err := engine.FindLeftovers(c.Context(), rd.Client)
			if err != nil {
				return usagef("--redis %s: %w", rf.spec, err)
			}
			var total int
			for _, l := range runs {
				if run != "" && l.Prefix != engine.KeyPrefix+run+":" {
					continue
				}
				fmt.Fprintf(stdout, "%s  %d keys  %d bytes  (e.g. %s)\n", l.Prefix, len(l.Keys), l.MemoryBytes, l.Keys[0])
				total += len(l.Keys)
				if yes {
					if err := engine.DeleteKeys(c.Context(), rd.Client, l.Keys); err != nil {
						return usagef("--redis %s: %w", rf.spec, err)
					}
				}
			}
			switch {
			case total == 0:
				fmt.Fprintln(stdout, "no ratelab keys found")
			case yes:
				fmt.Fprintf(stdout, "removed %d keys\n", total)
			default:
				fmt.Fprintf(stdout, "%d keys would be removed (dry run: pass --yes to remove them)\n", total)
			}
			return nil
		},
	}
	rf.add(c)
	c.Flags().Lookup("redis").DefValue = ""
	rf.spec = ""
	c.Flags().BoolVar(&yes, "yes", false, "remove the keys (default: only list them)")
	c.Flags().StringVar(&run, "run", "", "only this run id (as in the prefix ratelab:<run id>:)")
	return c
}
