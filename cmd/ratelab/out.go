package main

import (
	"io"
	"os"
	"path/filepath"

	"github.com/ratelab/ratelab/measure"
)

// createDecisionLog creates the directory out and its decisions.jsonl, the
// log every decision streams to. Errors are usage errors naming --out; the
// caller closes the log.
func createDecisionLog(out string) (*measure.DecisionLog, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, usagef("--out: %w", err)
	}
	df, err := os.Create(filepath.Join(out, "decisions.jsonl"))
	if err != nil {
		return nil, usagef("--out: %w", err)
	}
	return measure.NewDecisionLog(df), nil
}

// writeOutFile creates path and writes it with write; a file that cannot be
// created is a usage error naming --out.
func writeOutFile(path string, write func(w io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return usagef("--out: %w", err)
	}
	if err := write(fh); err != nil {
		_ = fh.Close() // the write's error is the one to report
		return err
	}
	return fh.Close()
}
