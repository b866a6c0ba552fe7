package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/spf13/cobra"
)

func newCleanCmd(stdout, stderr io.Writer) *cobra.Command {
	var rf redisFlags
	var yes bool
	var cfg server.CleanConfig
	c := &cobra.Command{
		Use:     "clean --redis URL [--run ID] [--yes]",
		Short:   "List (and with --yes remove) keys left behind by ratelab runs that were killed",
		Long:    helpText("clean", "long"),
		Example: helpText("clean", "example"),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !strings.Contains(rf.spec, "://") {
				return usagef("--redis: clean needs the URL of the Redis to clean, got %q", rf.spec)
			}
			if err := cfg.Validate(); err != nil {
				return cleanFieldError(err)
			}
			o, err := cleanOptions(&rf)
			if err != nil {
				return err
			}
			rd, err := server.OpenReadOnly(c.Context(), rf.spec, o)
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
			return publishClean(stdout, runs, cfg, yes, removed)
		},
	}
	rf.add(c)
	c.Flags().Lookup("redis").DefValue = ""
	rf.spec = ""
	c.Flags().BoolVar(&yes, "yes", false, "remove the keys (default: only list them)")
	c.Flags().StringVar(&cfg.Run, "run", "", "only this run id (as in the prefix ratelab:<run id>:); also removes a run that left no record")
	return c
}

// cleanFieldError maps CleanConfig's field names to clean's flags.
func cleanFieldError(err error) error {
	if name, ok := field.Name(err); ok && name == "run" {
		return usagef("--%s", err)
	}
	return usagef("%w", err)
}

// cleanOptions are redisFlags' server.Options, checked as open checks them.
func cleanOptions(f *redisFlags) (server.Options, error) {
	if f.timeout <= 0 {
		return server.Options{}, usagef("--connect-timeout: must be > 0, got %s", f.timeout)
	}
	if f.image != "" {
		return server.Options{}, usagef("--redis-image: only --redis container uses an image (got --redis %s)", server.RedactURL(f.spec))
	}
	o := server.Options{Timeout: f.timeout}
	if f.ca != "" {
		if !server.IsTLS(f.spec) {
			return o, usagef("--redis-ca: only rediss:// URLs use TLS (got --redis %s)", server.RedactURL(f.spec))
		}
		pool, err := server.LoadCA(f.ca)
		if err != nil {
			return o, usagef("--redis-ca: %w", err)
		}
		o.RootCAs = pool
	}
	return o, nil
}

// publishClean prints one line per run and the total to out, in one write
// whose error it returns.
func publishClean(out io.Writer, runs []server.Leftover, cfg server.CleanConfig, yes bool, removed int) error {
	var b strings.Builder
	w := &b
	var would, live int
	for _, l := range runs {
		fmt.Fprintf(w, "%s  %d keys  %d bytes  (e.g. %s)", l.Prefix, len(l.Keys), l.MemoryBytes, l.Keys[0])
		switch {
		case l.Live:
			live++
			who := ""
			if r := l.Record; r != nil {
				who = fmt.Sprintf(" (pid %d on %s, started %s)", r.PID, r.Host, r.Started.Format("2006-01-02 15:04:05Z"))
			}
			fmt.Fprintf(w, "  live run%s: skipped", who)
		case !l.Remove:
			fmt.Fprintf(w, "  no run record (an older ratelab's run?): kept; --run %s --yes removes it", l.RunID)
		default:
			would += len(l.Keys)
		}
		fmt.Fprintln(w)
	}
	switch {
	case len(runs) == 0:
		fmt.Fprintln(w, "no ratelab keys found")
	case yes:
		fmt.Fprintf(w, "removed %d keys\n", removed)
	default:
		fmt.Fprintf(w, "%d keys would be removed (dry run: pass --yes to remove them)\n", would)
	}
	if _, err := io.WriteString(out, b.String()); err != nil {
		return err
	}
	if live > 0 && cfg.Run != "" && yes {
		return usagef("--run: run %s is still running: its keys were not removed", cfg.Run)
	}
	return nil
}
