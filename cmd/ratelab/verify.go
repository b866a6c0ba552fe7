package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

type verifyFlags struct {
	redis       redisFlags
	algorithm   string
	script      string
	args        []string
	allowedWhen int64
	http        string
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
		Use:   "verify (--algorithm NAME | --script FILE --arg T... | --http URL) --limit L --window W",
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

Your own script: KEYS[1] is the key; each --arg is ARGV[i], in order, with
placeholders {now_us} {now_ms} {now_s} {window_us} {window_ms} {window_s}
{limit} {cost} {request_id} ({now_s} and {window_s} are decimal seconds). The
reply is an integer or an array whose first element is one; the request was
allowed when it equals --allowed-when. Without {now_*} the script reads its
own clock; without {cost} it is sent cost 1 only.

HTTP: GET; 2xx allowed, 429 denied, anything else an error.

Exit codes: 0 the property holds in every trial, 1 violated (counter-example
printed), 2 usage or environment error.`,
		Example: `  ratelab verify --algorithm sliding-log --limit 50 --window 10s
  ratelab verify --algorithm fixed-window --limit 50 --window 10s --format json
  ratelab verify --script limiter.lua --arg '{limit}' --arg '{window_s}' --arg '{now_us}' --arg '{request_id}' --limit 50 --window 2s
  ratelab verify --script carlson.lua --arg '[[{window_s}, {limit}]]' --arg '{now_s}' --arg '{cost}' --allowed-when 0 --limit 10 --window 1s
  ratelab verify --http http://127.0.0.1:8080/api --limit 10 --window 1s`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runVerify(c, f, stdout, stderr) },
	}
	fl := c.Flags()
	f.redis.add(c)
	fl.StringVar(&f.algorithm, "algorithm", "", "a built-in algorithm: "+strings.Join(algorithms.Names(), ", "))
	fl.StringVar(&f.script, "script", "", "a Lua file to verify (KEYS[1] is the key)")
	fl.StringArrayVar(&f.args, "arg", nil, "an ARGV template for --script, repeatable, in order")
	fl.Int64Var(&f.allowedWhen, "allowed-when", 1, "the --script reply integer that means allowed (0 for scripts that return 1 when over the limit)")
	fl.StringVar(&f.http, "http", "", "an HTTP endpoint to verify (GET; 2xx allowed, 429 denied)")
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

func (f *verifyFlags) check(c *cobra.Command) error {
	n := 0
	for _, s := range []string{f.algorithm, f.script, f.http} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return usagef("give exactly one of --algorithm, --script or --http")
	}
	if f.algorithm != "" && !slices.Contains(algorithms.Names(), f.algorithm) {
		return usagef("--algorithm: unknown algorithm %q (known: %s)", f.algorithm, strings.Join(algorithms.Names(), ", "))
	}
	if f.script == "" && (len(f.args) > 0 || c.Flags().Changed("allowed-when")) {
		return usagef("--arg and --allowed-when go with --script")
	}
	if f.limit < 1 {
		return usagef("--limit: must be >= 1, got %d (it is required)", f.limit)
	}
	if f.window <= 0 {
		return usagef("--window: must be > 0, got %s (it is required)", f.window)
	}
	if f.window < time.Millisecond {
		return usagef("--window: must be >= 1ms, got %s", f.window)
	}
	if f.precision < 0 || f.precision > f.window {
		return usagef("--precision: must be in 0..--window, got %s", f.precision)
	}
	if f.skew < 0 || f.skew >= f.window/2 {
		return usagef("--skew: must be in 0..window/2, got %s", f.skew)
	}
	if f.timeout <= 0 {
		return usagef("--timeout: must be > 0, got %s", f.timeout)
	}
	if f.maxOutage <= 0 {
		return usagef("--max-outage: must be > 0, got %s", f.maxOutage)
	}
	if f.clients < 1 || f.clients > 256 {
		return usagef("--clients: must be in 1..256, got %d", f.clients)
	}
	if !slices.Contains(reports.VerifyFormats, f.format) {
		return usagef("--format: unknown format %q (want table or json)", f.format)
	}
	return nil
}

func runVerify(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	if err := f.check(c); err != nil {
		return err
	}
	l := algorithms.Limit{Limit: f.limit, Window: f.window}
	var src string
	if f.script != "" {
		b, err := os.ReadFile(f.script)
		if err != nil {
			return usagef("--script: %w", err)
		}
		src = string(b)
	}
	var lim algorithms.Limiter
	var rd *engine.Redis
	if f.http != "" {
		h, err := algorithms.NewHTTPLimiter(f.http, l, 5*time.Second)
		if err != nil {
			return usagef("--http: %w", err)
		}
		lim = h
	} else {
		var err error
		if rd, err = f.redis.open(c); err != nil {
			return err
		}
		defer rd.Close()
		switch {
		case f.script != "":
			lim, err = algorithms.NewScriptLimiter(rd.Client, filepath.Base(f.script), src, f.args, f.allowedWhen, l)
			if err != nil {
				return usagef("--arg: %w", err)
			}
		case f.algorithm == "bucketed-hash":
			lim, err = algorithms.NewBucketedHash(rd.Client, algorithms.Limit{Limit: f.limit, Window: f.window, Precision: f.precision})
		default:
			lim, err = algorithms.New(f.algorithm, rd.Client, l)
		}
		if err != nil {
			return usagef("%w", err)
		}
	}
	var log *measure.DecisionLog
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return usagef("--out: %w", err)
		}
		df, err := os.Create(filepath.Join(f.out, "decisions.jsonl"))
		if err != nil {
			return usagef("--out: %w", err)
		}
		log = measure.NewDecisionLog(df)
		defer log.Close()
	}
	opts := harness.VerifyOptions{Limit: l, Skew: f.skew, Clients: f.clients, RealTimeMax: f.realTimeMax,
		Seed: f.seed, Log: log, Progress: stderr, Timeout: f.timeout, MaxOutage: f.maxOutage}
	var rdb redis.UniversalClient // none for --http
	if rd != nil {
		rdb = rd.Client
	}
	rep, err := harness.Verify(c.Context(), rdb, lim, opts)
	if err != nil {
		if f.script != "" {
			return usagef("--script %s: %w", f.script, err)
		}
		return usagef("%w", err)
	}
	if f.out != "" {
		fj, err := os.Create(filepath.Join(f.out, "verify.json"))
		if err != nil {
			return usagef("--out: %w", err)
		}
		if err := reports.WriteVerify(fj, "json", rep); err != nil {
			fj.Close()
			return err
		}
		if err := fj.Close(); err != nil {
			return err
		}
		fh, err := os.Create(filepath.Join(f.out, "report.html"))
		if err != nil {
			return usagef("--out: %w", err)
		}
		if err := reports.WriteVerifyHTML(fh, rep); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	if err := reports.WriteVerify(stdout, f.format, rep); err != nil {
		return err
	}
	switch rep.Verdict {
	case measure.Holds:
	case measure.Inconclusive:
		return failError{fmt.Sprintf("verify: %s: inconclusive — no trial could be run and judged (see the notes above)", rep.Target)}
	default:
		return failError{fmt.Sprintf("verify: %s %s (see the counter-example above)", rep.Target, rep.Verdict)}
	}
	return nil
}
