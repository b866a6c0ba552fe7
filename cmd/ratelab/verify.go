package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/targets"
)

// verifyFlags are verify's flags: most go straight into the verify.Config.
type verifyFlags struct {
	commonFlags
	target    targetFlags
	cfg       verify.Config
	limits    []string
	window    time.Duration
	precision time.Duration
	replay    string  // --replay: a verify.json whose counter-example to send again
	ci        ciFlags // --junit and the suite's reports (ci.go)
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &verifyFlags{}
	c := command("verify (--algorithm NAME | --script FILE [--key T...] [--arg T...] [--allowed EXPR] | --http URL | --config FILE) (--limit L --window W | --limit L/W...)", `Prove or refute "never more than L in any window W" (exit 1 with a counter-example)`,
		func(c *cobra.Command) error { return verifyTargets(c, f, stdout, stderr) })
	fl := c.Flags()
	f.addCommon(c, "also write verify.json and report.html to this directory; it must be new or empty", "verify", reports.VerifyFormats...)
	f.out.addDecisions(c)
	f.target.add(c)
	f.ci.add(c)
	cfg := &f.cfg
	fl.StringArrayVar(&f.limits, "limit", nil, "the limit L to verify, in cost units per --window; or L/W pairs, repeatable, all checked at once (e.g. 10/1s) (required)")
	windowVar(fl, &f.window, "window", 0, "the window W, e.g. 1s, 10s, 1m, 1d (required)")
	fl.DurationVar(&f.precision, "precision", 0, "bucketed-hash block length (default window/10)")
	fl.DurationVar(&cfg.Skew, "skew", 0, "make the skewed-client-clock family part of the verdict, with clocks this far off each way (e.g. 100ms)")
	fl.IntVar(&cfg.Clients, "clients", 8, "concurrent clients of the concurrency families")
	fl.BoolVar(&cfg.RealTime, "real-time", false, "also run the TTL and concurrency families in real time, on the wall clock (an end-to-end confirmation)")
	fl.DurationVar(&cfg.RealTimeMax, "real-time-max", time.Minute, "skip the real-time families when the window is longer than this")
	fl.Float64Var(&cfg.MinFidelity, "min-fidelity", verify.DefaultMinFidelity, "liveness: accepted / ideal (an exact sliding log) under overload must stay >= this, else STARVED (0 turns it off)")
	fl.BoolVar(&cfg.CheckIsolation, "check-isolation", false, "make isolation part of the verdict (traffic on one key must not change the answers on another)")
	fl.Int64Var(&cfg.Seed, "seed", 1, "seed of the random trials")
	fl.DurationVar(&cfg.Timeout, "timeout", 500*time.Millisecond, "bound on each decision call; a call past it is an error, never a verdict")
	fl.DurationVar(&cfg.MaxOutage, "max-outage", 2*time.Second, "stop with exit 2 when calls keep failing this long")
	fl.StringVar(&f.replay, "replay", "", "send the counter-example of this verify.json again, exactly, to the target it records (or to the one named): exit 1 when it still fails, 0 when it holds")
	fl.IntVar(&cfg.ShrinkBudget, "shrink-budget", verify.DefaultShrinkBudget, "calls that shrinking the counter-example may make (-1: show it as found)")
	fl.DurationVar(&cfg.Budget, "budget", verify.DefaultBudget, "the searching adversary's budget, as a call count (5000 calls per second given), so its result never depends on the machine's speed; 0 turns the search off")
	return c
}

// config checks the flags and turns them into a verify.Config for the
// one target of f.target.specs (verifyTargets loads them and sets each in turn).
func (f *verifyFlags) config(c *cobra.Command) (verify.Config, error) {
	cfg, spec := f.cfg, f.target.specs[0]            // verify's one target
	cfg.AdaptTimeout = !c.Flags().Changed("timeout") // virtual time: a slow machine is waited for
	cfg.TargetSHA256 = spec.Digest()
	limits, err := limit.ParseFlags(f.limits, f.window, c.Flags().Changed("window"))
	if err != nil {
		return cfg, flagError(c.Flags(), err)
	}
	limits, fromFile := spec.LimitsOr(limits, c.Flags().Changed("limit") || c.Flags().Changed("window")) // else the --config file's
	if len(limits) == 0 {
		limits = []limit.Limit{{Window: f.window}} // --limit's zero: Validate says it is required
	}
	limits[0].Precision = f.precision // the first limit's blocks (bucketed-hash)
	cfg.Limits = limits
	cfg.NoDefaults = true // a zero --timeout, --max-outage or --clients is a mistake
	if cfg.Budget == 0 {
		cfg.Budget = -1 // --budget 0: no search
	}
	if err := cfg.Validate(); err != nil {
		if name, _ := field.Name(err); fromFile && isLimitField(name) {
			return cfg, usagef("--config %s: %w", spec.From, err) // the file's limits, not --limit or --window
		}
		return cfg, requiredError(c.Flags(), err)
	}
	// the one builder's rule (targets.Spec.Build), checked before any Redis
	if err := spec.CheckLimits(cfg.Limits); err != nil {
		if fromFile {
			return cfg, usagef("--config %s: %w", spec.From, err)
		}
		return cfg, requiredError(c.Flags(), err)
	}
	return cfg, nil
}

func runVerify(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	if f.replay != "" {
		return runReplay(c, f, stdout, stderr)
	}
	cfg, err := f.config(c)
	if err != nil {
		return err
	}
	if f.out.dir != "" {
		if _, err := reports.OutDir(f.out.dir, "", f.out.force); err != nil {
			return flagError(nil, err)
		}
	}
	var rd *server.Redis // none for --http
	if f.target.specs[0].HTTP == "" {
		if rd, err = f.redis.open(c); err != nil {
			return err
		}
		defer closeRedis(rd, stderr)
	}
	cfg.RunID = server.NewRunID()
	rd, unguard, err := f.target.guard(c.Context(), rd, cfg.RunID, true, stderr)
	if err != nil {
		return err
	}
	defer unguard()
	lim, err := f.target.limiter(rd, cfg.Limits...)
	if err != nil {
		return err
	}
	if f.out.dir != "" {
		// created before the run, as the decision log used to create it
		if err := os.MkdirAll(f.out.dir, 0o755); err != nil {
			return flagError(nil, field.Errorf("out", "%w", err))
		}
	}
	if f.out.decisions != "" {
		if cfg.Log, err = reports.CreateDecisionFile(f.out.decisions); err != nil {
			return flagError(nil, err)
		}
	}
	cfg.Progress = stderr
	started := time.Now()
	rep, err := verify.Run(c.Context(), rd, lim, cfg)
	target := f.target.specs[0].Record()
	if rep != nil {
		rep.TargetSpec = target
		if err := writeTraceCSV(f.out.dir, rep.CounterExample); err != nil {
			return flagError(nil, err)
		}
	}
	err, werr := reports.FinishVerify(f.out.dir, cfg.Log, rep, err, func(err error) *measure.VerifyReport {
		inc := verify.Incomplete(rd, lim, cfg, started, err)
		inc.TargetSpec = target
		return inc
	})
	if err != nil {
		if server.IsGuardRefusal(err) && !errors.Is(err, server.ErrRefusedByGuard) {
			err = fmt.Errorf("%w: %v", server.ErrRefusedByGuard, err) // said as run says it, with --trust-script
		}
		err = errors.Join(err, flagError(nil, werr))
		if name := f.target.specs[0].Script; name != "" {
			return usagef("--script %s: %w", name, err)
		}
		return usagef("%w", err)
	}
	f.ci.record(rep)
	if werr != nil {
		return flagError(nil, werr)
	}
	input.CleanStrings(rep) // replies of a user's script or endpoint, shown in the tables
	if err := f.ci.print(f, rep, stdout); err != nil {
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

// traceCSV is the traffic file of the counter-example's trace beside
// verify.json.
const traceCSV = "counter-example.csv"

// writeTraceCSV writes the trace of ce (if any) to dir's traceCSV and
// names it in the trace; nothing when dir is "" or there is no trace.
func writeTraceCSV(dir string, ce *measure.CounterExample) error {
	if dir == "" || ce == nil || ce.Trace == nil {
		return nil
	}
	if err := reports.WriteFile(filepath.Join(dir, traceCSV), ce.Trace.WriteCSV); err != nil {
		return err
	}
	ce.Trace.CSV = traceCSV
	return nil
}

// runReplay is verify --replay: the counter-example of a verify.json sent
// again to the target it records (or to the target the flags name), with
// the limits and seed it records.
func runReplay(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	for _, name := range []string{"limit", "window", "precision"} {
		if c.Flags().Changed(name) {
			return usagef("--replay takes the limits its verify.json records: leave out --%s", name)
		}
	}
	rec, err := measure.ReadVerify(f.replay)
	if err != nil {
		return usagef("--replay: %w", err)
	}
	ce := rec.CounterExample
	if ce == nil || ce.Trace == nil {
		why := "it holds"
		if ce != nil {
			why = "its counter-example has no trace (found in real time, or by an older ratelab)"
		}
		return usagef("--replay %s: nothing to replay: %s", f.replay, why)
	}
	if f.target.given(c) {
		if err := f.target.load(c); err != nil {
			return err
		}
	} else {
		spec, err := targets.FromRecord(rec.TargetSpec, filepath.Dir(f.replay))
		if err != nil {
			return usagef("--replay %s: %w", f.replay, err)
		}
		f.target.specs = []targets.Spec{spec}
	}
	cfg := f.cfg
	cfg.Limits = rec.Repro.Limits
	if len(cfg.Limits) == 0 {
		cfg.Limits = []limit.Limit{{Count: rec.Limit, Window: time.Duration(rec.WindowMS) * time.Millisecond}}
	}
	cfg.Seed, cfg.NoDefaults = rec.Repro.Seed, true
	if err := cfg.Validate(); err != nil {
		return usagef("--replay %s: %w", f.replay, err)
	}
	if f.target.specs[0].HTTP != "" {
		return usagef("--replay: an HTTP endpoint cannot be replayed in virtual time")
	}
	rd, err := f.redis.open(c)
	if err != nil {
		return err
	}
	defer closeRedis(rd, stderr)
	cfg.RunID = server.NewRunID()
	rd, unguard, err := f.target.guard(c.Context(), rd, cfg.RunID, true, stderr)
	if err != nil {
		return err
	}
	defer unguard()
	lim, err := f.target.limiter(rd, cfg.Limits...)
	if err != nil {
		return err
	}
	cfg.Progress = stderr
	rep, err := verify.Replay(c.Context(), rd, lim, cfg, ce)
	if err != nil {
		return usagef("--replay %s: %w", f.replay, flagError(nil, err))
	}
	rep.TargetSpec = f.target.specs[0].Record()
	if err := f.format.render(rep)(stdout); err != nil {
		return err
	}
	switch rep.Verdict {
	case measure.Holds:
		return nil
	case measure.Inconclusive:
		return fmt.Errorf("verify --replay: %s: inconclusive — %s", rep.Target, rep.Reason())
	}
	return failError{fmt.Sprintf("verify --replay: %s %s again (see the counter-example above)", rep.Target, rep.Verdict)}
}
