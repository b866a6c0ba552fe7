package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness"
)

// outDir returns the directory a command writes to: out, or results/<run id>
// when out is empty, created if missing. Errors name --out.
func outDir(out, runID string) (string, error) {
	if out == "" {
		out = filepath.Join("results", runID)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", usagef("--out: %w", err)
	}
	return out, nil
}

// openRedis opens the Redis of rf and says which one on stderr. The caller
// closes it.
func openRedis(c *cobra.Command, rf *redisFlags, stderr io.Writer) (*harness.Redis, error) {
	rd, err := rf.open(c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "ratelab: Redis %s at %s (%s)\n", rd.Info.Version, rd.Info.Addr, rd.Info.Mode)
	return rd, nil
}
