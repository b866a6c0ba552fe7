package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/spf13/cobra"
)

// openOut gets a command its results directory and its Redis, in the
// order that loses nothing: --out is checked (outputDir) and made writable
// before Redis is opened, so a bad --out stops the command before it
// measures; a directory it created is removed again when Redis cannot be
// opened, so an unreachable Redis leaves no empty results directory. The
// caller closes the Redis.
func openOut(c *cobra.Command, rf *redisFlags, out, runID string, force bool, stderr io.Writer) (*server.Redis, string, error) {
	dir, err := outputDir(out, runID, force)
	if err != nil {
		return nil, "", err
	}
	_, statErr := os.Stat(dir)
	if err := makeOut(dir); err != nil {
		return nil, "", err
	}
	rd, err := openRedis(c, rf, stderr)
	if err != nil {
		if os.IsNotExist(statErr) {
			_ = os.Remove(dir) // only if still empty
		}
		return nil, "", err
	}
	return rd, dir, nil
}

// resultFiles are the files a ratelab command writes to its results
// directory: a directory holding only these (or nothing) is ratelab's.
var resultFiles = []string{"results.json", "decisions.jsonl", "report.md", "report.html", "verify.json", "*.png", "*.svg"}

// outputDir returns the directory a command writes to: out, or results/<run id>
// when out is empty. It creates nothing (see makeOut). An existing --out
// that is not empty is refused unless force, so that old and new results
// never mix; with force, the files of an earlier ratelab run are removed
// first (anything else in it is refused even then). Errors name --out.
func outputDir(out, runID string, force bool) (string, error) {
	if out == "" {
		return filepath.Join("results", runID), nil
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) == 0 {
		return out, nil // missing or empty: makeOut creates or fills it
	}
	var foreign []string
	for _, e := range entries {
		if !isResultFile(e.Name()) || e.IsDir() {
			foreign = append(foreign, e.Name())
		}
	}
	switch {
	case len(foreign) > 0:
		return "", usagef("--out: %s holds files that are not ratelab results (%s): choose an empty or new directory", out, strings.Join(foreign[:min(len(foreign), 3)], ", "))
	case !force:
		return "", usagef("--out: %s already holds results (%s); pass --force to replace them, or choose a new directory", out, entries[0].Name())
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(out, e.Name())); err != nil {
			return "", usagef("--out: %w", err)
		}
	}
	return out, nil
}

func isResultFile(name string) bool {
	for _, p := range resultFiles {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// makeOut creates dir (and its parents) when there is something to write
// to it, so an early failure leaves no empty directory, and checks that
// files can be written there (a probe file is created and removed), so a
// read-only --out stops the command before it measures anything. Errors
// name --out.
func makeOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("--out: %s is not writable: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".ratelab-probe-*")
	if err != nil {
		return usagef("--out: %s is not writable: %w", dir, err)
	}
	_ = f.Close() // an empty probe, removed next: the removal's error says enough
	return os.Remove(f.Name())
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

// publish writes a command's results to out (writeDir: results.json,
// report.md, report.html, plots) and to stdout in its --format (write), says
// on stderr where they are, and turns a run that stopped early (runErr) into
// the command's error: the results are written either way, marked
// incomplete.
func publish(stdout, stderr io.Writer, cmd, out string, durationMS int64, runErr error,
	writeDir func(dir string) error, write func(w io.Writer) error) error {
	if err := writeDir(out); err != nil {
		return fmt.Errorf("write results to %s: %w", out, err)
	}
	if err := write(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "ratelab: results in %s (results.json, report.md, report.html, plots) — %d ms\n", out, durationMS)
	if runErr != nil {
		return fmt.Errorf("%s stopped early (results marked incomplete): %w", cmd, runErr)
	}
	return nil
}

// rerender reads a results directory written by one command (read), writes
// its files again (writeDir) and prints it in --format: `ratelab report
// DIR`. An unreadable results.json is a usage error (exit 2).
func rerender[T any](stdout io.Writer, dir string, format *formatFlag, read func(path string) (T, error),
	writeDir func(dir string, r T) error) error {
	res, err := read(filepath.Join(dir, "results.json"))
	if err != nil {
		return usageError{err}
	}
	if err := writeDir(dir, res); err != nil {
		return err
	}
	return format.render(res)(stdout)
}

// flagError turns a library error about a field (field.Error) into a usage
// error naming the flag: the field "window" is the flag --window, "limits[2]"
// is --limits; a field whose flag is spelled otherwise is looked up in
// flags. Any other error is returned as a usage error unchanged.
func flagError(err error, flags map[string]string) error {
	if err == nil {
		return nil
	}
	name, ok := field.Name(err)
	if !ok {
		return usageError{err}
	}
	var fe *field.Error
	errors.As(err, &fe)
	base, _, _ := strings.Cut(name, "[")
	flag := "--" + base
	if f, ok := flags[base]; ok {
		flag = f
	}
	return usagef("%s: %w", flag, fe.Err)
}
