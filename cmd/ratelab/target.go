package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/engine"
)

// targetFlags name the one limiter a command drives: a built-in
// --algorithm, a user's --script with its --arg templates and
// --allowed-when, or an --http endpoint.
type targetFlags struct {
	algorithm   string
	script      string
	args        []string
	allowedWhen int64
	http        string
	src         string // the --script's source, read by load
}

// add declares the target flags on c.
func (t *targetFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&t.algorithm, "algorithm", "", "a built-in algorithm: "+strings.Join(algorithms.Names(), ", "))
	fl.StringVar(&t.script, "script", "", "a Lua file to verify (KEYS[1] is the key)")
	fl.StringArrayVar(&t.args, "arg", nil, "an ARGV template for --script, repeatable, in order")
	fl.Int64Var(&t.allowedWhen, "allowed-when", 1, "the --script reply integer that means allowed (0 for scripts that return 1 when over the limit)")
	fl.StringVar(&t.http, "http", "", "an HTTP endpoint to verify (GET; 2xx allowed, 429 denied)")
}

// check enforces the command-line rules: exactly one target, a known
// algorithm, --arg and --allowed-when only with --script.
func (t *targetFlags) check(c *cobra.Command) error {
	n := 0
	for _, s := range []string{t.algorithm, t.script, t.http} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return usagef("give exactly one of --algorithm, --script or --http")
	}
	if t.algorithm != "" && !slices.Contains(algorithms.Names(), t.algorithm) {
		return usagef("--algorithm: unknown algorithm %q (known: %s)", t.algorithm, strings.Join(algorithms.Names(), ", "))
	}
	if t.script == "" && (len(t.args) > 0 || c.Flags().Changed("allowed-when")) {
		return usagef("--arg and --allowed-when go with --script")
	}
	return nil
}

// load reads the --script file, if any (before any Redis is opened).
func (t *targetFlags) load() error {
	if t.script == "" {
		return nil
	}
	b, err := os.ReadFile(t.script)
	if err != nil {
		return usagef("--script: %w", err)
	}
	t.src = string(b)
	return nil
}

// usesRedis reports whether the target runs in Redis (every target but --http).
func (t *targetFlags) usesRedis() bool { return t.http == "" }

// limiter builds the target for limit l on rd (nil for --http), after
// load. l.Precision reaches bucketed-hash only (the others would print it
// in their description). Errors are usage errors naming the flag.
func (t *targetFlags) limiter(rd *engine.Redis, l algorithms.Limit) (algorithms.Limiter, error) {
	var rdb redis.Scripter
	if rd != nil {
		rdb = rd.Client
	}
	if t.algorithm != "bucketed-hash" {
		l.Precision = 0
	}
	switch {
	case t.http != "":
		h, err := algorithms.NewHTTPLimiter(t.http, l, 5*time.Second)
		if err != nil {
			return nil, usagef("--http: %w", err)
		}
		return h, nil
	case t.script != "":
		s, err := algorithms.NewScriptLimiter(rdb, filepath.Base(t.script), t.src, t.args, t.allowedWhen, l)
		if err != nil {
			return nil, usagef("--arg: %w", err)
		}
		return s, nil
	}
	lim, err := algorithms.New(t.algorithm, rdb, l)
	if err != nil {
		return nil, usagef("%w", err)
	}
	return lim, nil
}
