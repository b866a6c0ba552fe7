package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

type verifyFlags struct {
	redis       redisFlags
	target      targetFlags
	limit       int64
	window      time.Duration
	precision   time.Duration
	skew        time.Duration
	clients     int
	realTimeMax time.Duration
	seed        int64
	format      string
	out         string
	timeout     time.Duration
	maxOutage   time.Duration
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &verifyFlags{}
	c := &cobra.Command{
		Use:   "verify (--algorithm NAME | --script FILE [--key T...] [--arg T...] [--allowed EXPR] | --http URL | --config FILE) --limit L --window W",
		Short: `Prove or refute "never more than L in any window W" (exit 1 with a counter-example)`,
		Long: `verify drives a rate limiter with adversarial traffic — bursts at window
boundaries and at many phases of the window, same-instant bursts, concurrent
clients, sustained overload, idle gaps, weighted costs, several keys, skewed
client clocks — and checks that no window of length W ever held more than L
accepted (and that overload does not starve legitimate traffic: accepted /
ideal >= 0.9).

A limiter that takes an injected clock runs in virtual time (the families
that exercise key TTLs run in real time); one that reads its own clock runs
in real time on the Redis server's clock, judged conservatively: a set of
decisions counts as inside one window only if the last answer came less than
W after the first request was sent. It never cries wolf on a correct limiter.

Your own script, exactly as written: each --key is KEYS[i] (default one,
{key}, the trial's key), each --arg ARGV[i], in order: templates with
placeholders {key} {now_us} {now_ms} {now_s} {window_us} {window_ms}
{window_s} {limit} {cost} {request_id} or expressions over them
({floor(now_ms / window_ms)}, {limit / window_s}). --allowed says which
reply means allowed: reply == 1 (the default), reply != nil (Lua false
denies), reply <= limit, reply[2] >= 0, reply in [1, 2]. A script that reads
Redis TIME itself runs on virtual time too; one that reads no clock runs in
real time; without {cost} it is sent cost 1 only. A reply --allowed cannot
judge stops verify at once (exit 2), showing the reply. --config FILE reads
all of this, and the limits, from a file (docs/config.md).

HTTP: GET; 2xx allowed, 429 denied, anything else an error.

Exit codes: 0 the property holds in every trial, 1 violated (counter-example
printed), 2 usage or environment error.`,
		Example: `  ratelab verify --algorithm sliding-log --limit 50 --window 10s
  ratelab verify --algorithm fixed-window --limit 50 --window 10s --format json
  ratelab verify --script limiter.lua --arg '{limit}' --arg '{window_s}' --arg '{now_us}' --arg '{request_id}' --limit 50 --window 2s
  ratelab verify --script carlson.lua --arg '[[{window_s}, {limit}]]' --arg '{now_s}' --arg '{cost}' --allowed-when 0 --limit 10 --window 1s
  ratelab verify --script fixed.lua --allowed 'reply != nil' --arg '{window_ms}' --arg '{limit}' --limit 10 --window 1s
  ratelab verify --script counter.lua --key '{key}:{floor(now_ms / window_ms)}' --key '{key}:{floor(now_ms / window_ms) - 1}' --arg '{now_ms}' --allowed 'reply <= limit' --limit 10 --window 1s
  ratelab verify --config ratelab.yaml
  ratelab verify --http http://127.0.0.1:8080/api --limit 10 --window 1s`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runVerify(c, f, stdout, stderr) },
	}
	fl := c.Flags()
	f.redis.add(c)
	f.target.add(c)
	fl.Int64Var(&f.limit, "limit", 0, "the limit L to verify, in cost units per window (required)")
	fl.DurationVar(&f.window, "window", 0, "the window W, e.g. 1s, 10s, 1m (required)")
	fl.DurationVar(&f.precision, "precision", 0, "bucketed-hash block length (default window/10)")
	fl.DurationVar(&f.skew, "skew", 0, "make the skewed-client-clock family part of the verdict, with clocks this far off each way (e.g. 100ms)")
	fl.IntVar(&f.clients, "clients", 8, "concurrent clients of the concurrency families")
	fl.DurationVar(&f.realTimeMax, "real-time-max", time.Minute, "skip the real-time families when the window is longer than this")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the random trials")
	fl.StringVar(&f.format, "format", "table", "table or json")
	fl.DurationVar(&f.timeout, "timeout", 500*time.Millisecond, "bound on each decision call; a call past it is an error, never a verdict")
	fl.DurationVar(&f.maxOutage, "max-outage", 2*time.Second, "stop with exit 2 when calls keep failing this long")
	fl.StringVar(&f.out, "out", "", "also write verify.json, decisions.jsonl and report.html to this directory")
	return c
}

// verifyFlagOf maps verify.Config's field names to their flags.
var verifyFlagOf = map[string]string{"limit": "--limit", "window": "--window", "precision": "--precision",
	"skew": "--skew", "clients": "--clients", "real_time_max": "--real-time-max", "timeout": "--timeout", "max_outage": "--max-outage"}

// config checks the flags and turns them into a verify.Config.
func (f *verifyFlags) config(c *cobra.Command) (verify.Config, error) {
	if err := f.target.check(c); err != nil {
		return verify.Config{}, err
	}
	if err := f.target.load(); err != nil {
		return verify.Config{}, err
	}
	if ls := f.target.fileLimits(); len(ls) > 0 && !c.Flags().Changed("limit") && !c.Flags().Changed("window") {
		f.limit, f.window = ls[0].Limit, ls[0].Window // the --config file's (its first limit)
	}
	cfg := verify.Config{Limit: f.limit, Window: f.window, Precision: f.precision, Skew: f.skew, Clients: f.clients,
		RealTimeMax: f.realTimeMax, Seed: f.seed, Timeout: f.timeout, MaxOutage: f.maxOutage}
	if err := cfg.Validate(); err != nil {
		return cfg, fieldUsage(c, err, verifyFlagOf)
	}
	// zero means the library's default; on the command line the default is
	// the flag's own, so a zero is a mistake (run's --max-outage 0 is "never")
	switch {
	case f.timeout == 0:
		return cfg, usagef("--timeout: must be > 0, got %s", f.timeout)
	case f.maxOutage == 0:
		return cfg, usagef("--max-outage: must be > 0, got %s", f.maxOutage)
	case f.clients == 0:
		return cfg, usagef("--clients: must be in 1..%d, got 0", verify.MaxClients)
	}
	if !slices.Contains(reports.VerifyFormats, f.format) {
		return cfg, usagef("--format: unknown format %q (want table or json)", f.format)
	}
	return cfg, nil
}

func runVerify(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	cfg, err := f.config(c)
	if err != nil {
		return err
	}
	var rd *engine.Redis // none for --http
	if f.target.usesRedis() {
		if rd, err = f.redis.open(c); err != nil {
			return err
		}
		defer rd.Close()
	}
	lim, err := f.target.limiter(rd, cfg.Rate())
	if err != nil {
		return err
	}
	if f.out != "" {
		if cfg.Log, err = createDecisionLog(f.out); err != nil {
			return err
		}
		defer cfg.Log.Close()
	}
	cfg.Progress = stderr
	rep, err := verify.Run(c.Context(), rd, lim, cfg)
	if err != nil {
		if name := f.target.scriptName(); name != "" {
			return usagef("--script %s: %w", name, err)
		}
		return usagef("%w", err)
	}
	if f.out != "" {
		if err := writeOutFile(filepath.Join(f.out, "verify.json"), func(w io.Writer) error { return reports.WriteVerify(w, "json", rep) }); err != nil {
			return err
		}
		if err := writeOutFile(filepath.Join(f.out, "report.html"), func(w io.Writer) error { return reports.WriteVerifyHTML(w, rep) }); err != nil {
			return err
		}
	}
	if err := reports.WriteVerify(stdout, f.format, rep); err != nil {
		return err
	}
	switch rep.Verdict {
	case measure.Holds:
		return nil
	case measure.Inconclusive:
		return failError{fmt.Sprintf("verify: %s: inconclusive — no trial could be run and judged (see the notes above)", rep.Target)}
	}
	return failError{fmt.Sprintf("verify: %s %s (see the counter-example above)", rep.Target, rep.Verdict)}
}
