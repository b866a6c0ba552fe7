package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

type verifyFlags struct {
	redis       redisFlags
	target      targetFlags
	limits      []string
	window      time.Duration
	realTime    bool
	minFidelity float64
	checkIso    bool
	precision   time.Duration
	skew        time.Duration
	clients     int
	realTimeMax time.Duration
	seed        int64
	format      formatFlag
	out         string
	force       bool
	timeout     time.Duration
	maxOutage   time.Duration
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &verifyFlags{}
	c := &cobra.Command{
		Use:   "verify (--algorithm NAME | --script FILE [--key T...] [--arg T...] [--allowed EXPR] | --http URL | --config FILE) (--limit L --window W | --limit L/W...)",
		Short: `Prove or refute "never more than L in any window W" (exit 1 with a counter-example)`,
		Long: `verify drives a rate limiter with adversarial traffic — bursts at window
boundaries and at many phases of the window, same-instant bursts, concurrent
clients, sustained overload, idle gaps, weighted costs, several keys, skewed
client clocks — and checks that no window of length W ever held more than L
accepted (and that overload does not starve legitimate traffic: accepted /
ideal >= 0.9).

Besides the families, a dense stream (a request at a fine step through every
phase of the window: rounding bugs) and a greedy adversary (after each denial,
the earliest instant the limiter's own retry-after, checked by bisection, says
it could pass) measure how far past the limit a limiter can be pushed.

A limiter that takes an injected clock (built-ins, gcra, scripts with {now_*}
or that read Redis TIME) runs every family in virtual time: exact, at its own
clock's resolution, with key TTLs emulated on the virtual clock, so W = 24h
takes seconds. --real-time runs the families that exercise key TTLs and
concurrency again on the wall clock (windows up to --real-time-max). A
limiter that reads its own clock (HTTP) runs in real time, judged
conservatively: a set of decisions counts as inside one window only if the
last answer came less than W after the first request was sent. It never cries
wolf on a correct limiter.

Several limits at once: --limit 10/1s --limit 120/1m --limit 240/1h checks
every limit at the same time (the counter-example names the limit that
broke); bucketed-hash then enforces them all.

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

Liveness (accepted / ideal under overload) and isolation (a key answered as
the same limiter answers a fresh key) are always reported; they are part of
the verdict only with --min-fidelity and --check-isolation.

A Redis given by URL that may evict keys (maxmemory with an allkeys-* or
volatile-* policy) and has less headroom than the trials may write is
refused (exit 2); a verification whose Redis evicts a key, or runs low on
headroom, stops (exit 2). --allow-eviction runs anyway and does not stop.

Exit codes: 0 the property holds in every trial, 1 some window of length W
held more than L (counter-example printed; also a failed --min-fidelity or
--check-isolation), 2 usage or environment error, or nothing could be
checked (inconclusive).`,
		Example: `  ratelab verify --algorithm sliding-log --limit 50 --window 10s
  ratelab verify --algorithm fixed-window --limit 50 --window 24h --format json
  ratelab verify --algorithm bucketed-hash --limit 10/1s --limit 120/1m --limit 240/1h
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
	f.redis.addEviction(c)
	f.target.add(c)
	fl.StringArrayVar(&f.limits, "limit", nil, "the limit L to verify, in cost units per --window; or L/W pairs, repeatable, all checked at once (e.g. 10/1s) (required)")
	windowVar(fl, &f.window, "window", 0, "the window W, e.g. 1s, 10s, 1m, 1d (required)")
	fl.DurationVar(&f.precision, "precision", 0, "bucketed-hash block length (default window/10)")
	fl.DurationVar(&f.skew, "skew", 0, "make the skewed-client-clock family part of the verdict, with clocks this far off each way (e.g. 100ms)")
	fl.IntVar(&f.clients, "clients", 8, "concurrent clients of the concurrency families")
	fl.BoolVar(&f.realTime, "real-time", false, "also run the TTL and concurrency families in real time, on the wall clock (an end-to-end confirmation)")
	fl.DurationVar(&f.realTimeMax, "real-time-max", time.Minute, "skip the real-time families when the window is longer than this")
	fl.Float64Var(&f.minFidelity, "min-fidelity", 0, "make liveness part of the verdict: accepted / ideal under overload must stay >= this (e.g. 0.9)")
	fl.BoolVar(&f.checkIso, "check-isolation", false, "make isolation part of the verdict (traffic on one key must not change the answers on another)")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the random trials")
	f.format.add(c, reports.VerifyFormats...)
	fl.DurationVar(&f.timeout, "timeout", 500*time.Millisecond, "bound on each decision call; a call past it is an error, never a verdict")
	fl.DurationVar(&f.maxOutage, "max-outage", 2*time.Second, "stop with exit 2 when calls keep failing this long")
	fl.StringVar(&f.out, "out", "", "also write verify.json, decisions.jsonl and report.html to this directory; it must be new or empty")
	fl.BoolVar(&f.force, "force", false, "replace the results of an earlier verify in --out")
	return c
}

// verifyFlagOf maps verify.Config's field names to their flags.
var verifyFlagOf = map[string]string{"limit": "--limit", "limits": "--limit", "window": "--window", "precision": "--precision",
	"skew": "--skew", "clients": "--clients", "real_time_max": "--real-time-max", "timeout": "--timeout", "max_outage": "--max-outage",
	"min_fidelity": "--min-fidelity"}

// config checks the flags and turns them into a verify.Config.
func (f *verifyFlags) config(c *cobra.Command) (verify.Config, error) {
	if err := f.target.check(c); err != nil {
		return verify.Config{}, err
	}
	if err := f.target.load(); err != nil {
		return verify.Config{}, err
	}
	cfg := verify.Config{Skew: f.skew, Clients: f.clients,
		RealTime: f.realTime, RealTimeMax: f.realTimeMax, MinFidelity: f.minFidelity, CheckIsolation: f.checkIso,
		Seed: f.seed, Timeout: f.timeout, MaxOutage: f.maxOutage, TargetSHA256: f.target.digest()}
	limits, err := parseLimits(f.limits, f.window, c.Flags().Changed("window"))
	if err != nil {
		return cfg, err
	}
	fromFile := false
	if ls := f.target.fileLimits(); len(ls) > 0 && !c.Flags().Changed("limit") && !c.Flags().Changed("window") {
		limits, fromFile = slices.Clone(ls), true // the --config file's, every one at once
	}
	if len(limits) == 0 {
		limits = []limit.Limit{{Window: f.window}} // --limit's zero: Validate says it is required
	}
	limits[0].Precision = f.precision // the first limit's blocks (bucketed-hash)
	cfg.Limits = limits
	if err := cfg.Validate(); err != nil {
		return cfg, fieldUsage(c, err, verifyFlagOf)
	}
	// the one builder's rule (targets.Spec.Build), checked before any Redis
	if err := f.target.specs[0].CheckLimits(cfg.Limits); err != nil {
		if fromFile {
			return cfg, usagef("--config %s: %w", f.target.specs[0].From, err)
		}
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
	if _, err := f.format.get(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func runVerify(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	cfg, err := f.config(c)
	if err != nil {
		return err
	}
	if f.out != "" {
		if _, err := outputDir(f.out, "", f.force); err != nil {
			return err
		}
	}
	var rd *server.Redis // none for --http
	if f.target.usesRedis() {
		if rd, err = f.redis.open(c); err != nil {
			return err
		}
		defer closeRedis(rd, stderr)
	}
	if cfg.RunID == "" {
		cfg.RunID = server.NewRunID()
	}
	rd, unguard, err := f.target.guard(c.Context(), rd, cfg.RunID, true, stderr)
	if err != nil {
		return err
	}
	defer unguard()
	lim, err := f.target.limiter(rd, cfg.Limits...)
	if err != nil {
		return err
	}
	if f.out != "" {
		if cfg.Log, err = createDecisionLog(f.out); err != nil {
			return err
		}
	}
	cfg.Progress = stderr
	started := time.Now()
	rep, err := verify.Run(c.Context(), rd, lim, cfg)
	if cfg.Log != nil {
		// Close flushes decisions.jsonl: when it fails, the file misses
		// decisions and the verification's record is incomplete
		if cerr := cfg.Log.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("write %s: %w", filepath.Join(f.out, "decisions.jsonl"), cerr))
		}
	}
	if err != nil && f.out != "" {
		// what was asked and why it stopped, marked incomplete: never no file
		partial := verify.Incomplete(rd, lim, cfg, started, err)
		if werr := writeOutFile(filepath.Join(f.out, "verify.json"), func(w io.Writer) error { return reports.Render(w, reports.JSON, partial) }); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		if name := f.target.scriptName(); name != "" {
			return usagef("--script %s: %w", name, err)
		}
		return usagef("%w", err)
	}
	if f.out != "" {
		if err := writeOutFile(filepath.Join(f.out, "verify.json"), func(w io.Writer) error { return reports.Render(w, reports.JSON, rep) }); err != nil {
			return err
		}
		if err := writeOutFile(filepath.Join(f.out, "report.html"), func(w io.Writer) error { return reports.WriteVerifyHTML(w, rep) }); err != nil {
			return err
		}
	}
	if err := f.format.render(rep)(stdout); err != nil {
		return err
	}
	switch rep.Verdict {
	case measure.Holds:
		return nil
	case measure.Inconclusive:
		// nothing was checked, or calls failed: not a verdict on the limiter (exit 2)
		return fmt.Errorf("verify: %s: inconclusive — %s (see the notes above)", rep.Target, rep.Reason())
	}
	return failError{fmt.Sprintf("verify: %s %s (see the counter-example above)", rep.Target, rep.Verdict)}
}

// parseLimits reads --limit: one plain L (per --window), or L/W pairs
// (limit.Parse; and then no --window). An empty list is left to Validate
// (it is required); bad values are left to Validate too, which names the
// field.
func parseLimits(vals []string, window time.Duration, windowSet bool) ([]limit.Limit, error) {
	var out []limit.Limit
	for _, v := range vals {
		if !strings.Contains(v, "/") && !strings.Contains(v, " per ") {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, usagef("--limit: %q is not L or L/W (e.g. 20 or 10/1s)", v)
			}
			if len(vals) > 1 {
				return nil, usagef("--limit %s: several limits are given as L/W pairs (e.g. --limit 10/1s --limit 120/1m)", v)
			}
			out = append(out, limit.Limit{Count: n, Window: window})
			continue
		}
		if windowSet {
			return nil, usagef("--limit %s: give the window in the pair or in --window, not both", v)
		}
		l, err := limit.Parse(v)
		if err != nil {
			return nil, usagef("--limit: %w", err)
		}
		out = append(out, l)
	}
	return out, nil
}
