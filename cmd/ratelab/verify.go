package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/harness/verifyjob"
	"github.com/ratelab/ratelab/harness/verifyprep"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/publish/ci"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/targets"
)

// verifyFlags are verify's flags: most go straight into the verify.Config.
type verifyFlags struct {
	commonFlags
	target  targetFlags
	cfg     verify.Config
	limits  []string          // --limit, into lim.Given
	window  time.Duration     // --window
	lim     verifyprep.Limits // --precision
	replay  string            // --replay: a verify.json whose counter-example to send again
	ci      ci.Collect        // --junit and the suite's reports (verifyTargets)
	gate    string            // --gate, read into gated
	gated   verifyjob.Gate
	current *measure.VerifyReport // the running target's report, once it has one
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	return (&verifyFlags{}).command(stdout, stderr)
}

// newVerifyFamiliesTopic is `ratelab help verify-families`: how verify
// tests a limiter, at length (the families, templates, several limits,
// real time, CI), beside docs/verify.md.
func newVerifyFamiliesTopic() *cobra.Command {
	return &cobra.Command{Use: "verify-families", Short: "How verify tests a limiter: the families, templates, limits, clocks, CI",
		Long: helpText("verify-families", "long")}
}

// command is verify's command, its flags bound to f.
func (f *verifyFlags) command(stdout, stderr io.Writer) *cobra.Command {
	c := command("verify (--algorithm NAME | --script FILE [--key T...] [--arg T...] [--allowed EXPR] | --function LIB [--fcall NAME] [--key T...] [--arg T...] | --http URL | --exec CMD | --config FILE) (--limit L --window W | --limit L/W...)", `Prove or refute "never more than L in any window W" (exit 1 with a counter-example)`,
		func(c *cobra.Command) error { return verifyTargets(c, f, stdout, stderr) })
	fl := c.Flags()
	f.addCommon(c, "also write verify.json and report.html to this directory; it must be new or empty", "verify", reports.VerifyFormats...)
	f.out.addDecisions(c)
	f.target.add(c)
	fl.StringVar(&f.ci.JUnit, "junit", "", "also write a JUnit XML report to this file (- for stdout): one testcase per target, limit and family, the counter-example in the failure")
	fl.StringVar(&f.gate, "gate", string(verifyjob.GateBoth), "which part of the verdict fails the command (exit 1): safety (the limit exceeded), liveness (starved; isolation with --check-isolation) or both")
	cfg := &f.cfg
	fl.StringArrayVar(&f.limits, "limit", nil, "the limit L to verify, in cost units per --window; or L/W pairs, repeatable, all checked at once (e.g. 10/1s) (required)")
	windowVar(fl, &f.window, "window", 0, "the window W, e.g. 1s, 10s, 1m, 1d (required)")
	fl.DurationVar(&f.lim.Precision, "precision", 0, "bucketed-hash block length (default window/10)")
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

// config checks the flags and turns them into the Plan of verifying the
// one target of f.target.specs (verifyTargets loads them and sets each in
// turn): verifyprep.Check, its errors naming the flag or the file.
func (f *verifyFlags) config(c *cobra.Command) (verifyprep.Plan, error) {
	cfg := f.cfg
	cfg.AdaptTimeout = !c.Flags().Changed("timeout") // virtual time: a slow machine is waited for
	cfg.NoDefaults = true                            // a zero --timeout, --max-outage or --clients is refused
	if cfg.Budget == 0 {
		cfg.Budget = -1 // --budget 0: no search
	}
	ls := f.lim
	var err error
	if ls.Given, err = limit.ParseFlags(f.limits, f.window, c.Flags().Changed("window")); err != nil {
		return verifyprep.Plan{Config: cfg}, flagError(c.Flags(), err)
	}
	if len(ls.Given) == 0 {
		ls.Given = []limit.Limit{{Window: f.window}} // no count: --limit is required
	}
	ls.Gave = c.Flags().Changed("limit") || c.Flags().Changed("window") // else the --config file's
	p, err := verifyprep.Check(cfg, f.target.specs[0], ls)
	var fe *verifyprep.FileError
	if errors.As(err, &fe) { // the file's limits, not --limit or --window
		return p, usagef("--config %s: %w", fe.File, fe.Err)
	}
	return p, requiredError(c.Flags(), err)
}

func runVerify(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	plan, err := f.config(c)
	if err != nil {
		return err
	}
	if f.out.dir != "" {
		if _, err := outdir.Resolve(f.out.dir, "", f.out.force); err != nil {
			return flagError(nil, err)
		}
	}
	p, done, err := f.open(c, plan, stderr)
	if err != nil {
		return err
	}
	defer done()
	job := verifyjob.Job{Config: p.Config, Target: p.Spec.Record(), Out: f.out.dir, Decisions: f.out.decisions}
	rep, err := job.Run(c.Context(), p.Redis, p.Limiter, stderr)
	err, werr := outdir.Split(err)
	if err != nil {
		err = errors.Join(err, flagError(c.Flags(), werr))
		if te := teachError(c, err); te != nil {
			return te
		}
		if spec := p.Spec; spec.Script != "" {
			return scriptError(spec.Flag(), spec.Script, spec.Name, err)
		}
		return usagef("%w", err)
	}
	if f.current = rep; werr != nil {
		return flagError(c.Flags(), werr)
	}
	if f.ci.Prints() {
		if err := f.format.Renderer(rep)(stdout); err != nil {
			return err
		}
	}
	msg, failed := verifyjob.Outcome(rep, false, f.gated, f.shown())
	return outcome(prefix("verify: ", msg), failed)
}

// open opens the Redis of plan's target (none for --http) and prepares
// the plan on it (verifyprep.Plan.Open: its script compiled, tried and
// guarded unless --trust-script, its limiter built), saying on stderr how
// the script runs; done undoes it all. Errors are usage errors naming the
// flag.
func (f *verifyFlags) open(c *cobra.Command, plan verifyprep.Plan, stderr io.Writer) (*verifyprep.Prepared, func(), error) {
	var rd *server.Redis
	if plan.Spec.HTTP == "" {
		var err error
		if rd, err = f.redis.open(c); err != nil {
			return nil, nil, openError(err)
		}
	}
	p, err := plan.Open(c.Context(), rd, verifyprep.Guard{Trust: f.target.trust, Told: tellGuard(stderr), Progress: stderr})
	if err != nil {
		if rd != nil {
			rd.CloseOrSay(stderr)
		}
		return nil, nil, openError(err)
	}
	return p, func() {
		if err := p.Close(); err != nil {
			fmt.Fprintln(stderr, "ratelab:", err)
		}
		if rd != nil {
			rd.CloseOrSay(stderr)
		}
	}, nil
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
	if c.Flags().Changed("junit") {
		return usagef("--junit: a replay writes no JUnit report (it prints its report on stdout, --format table or json): leave out --junit or --replay")
	}
	rec, err := verifyjob.ReadReplay(f.replay)
	switch {
	case errors.Is(err, verifyjob.ErrNothingToReplay):
		return usagef("--replay %s: %w", f.replay, err)
	case err != nil:
		return usagef("--replay: %w", err)
	}
	var spec *targets.Spec // the flags' target, else the one verify.json records
	if f.target.given(c) {
		if err := f.target.load(c, nil); err != nil {
			return err
		}
		spec = &f.target.specs[0]
	}
	r, err := verifyjob.NewReplay(rec, f.replay, spec, f.cfg)
	switch {
	case errors.Is(err, verifyjob.ErrHTTPReplay):
		return usagef("--replay: %w", err)
	case err != nil:
		return usagef("--replay %s: %w", f.replay, err)
	}
	f.target.specs = []targets.Spec{r.Spec}
	p, done, err := f.open(c, r.Plan, stderr)
	if err != nil {
		return err
	}
	defer done()
	rep, err := r.Run(c.Context(), p, stderr)
	if err != nil {
		return usagef("--replay %s: %w", f.replay, flagError(nil, err))
	}
	if err := f.format.Renderer(rep)(stdout); err != nil {
		return err
	}
	msg, failed := verifyjob.Outcome(rep, true, f.gated, f.shown())
	return outcome(prefix("verify --replay: ", msg), failed)
}

// shown is where the report went on stdout: the text, the JSON object
// (--format json, alone or in a suite's), or nowhere (--junit -).
func (f *verifyFlags) shown() verifyjob.Shown {
	switch {
	case f.ci.JUnit == "-":
		return verifyjob.Nowhere
	case f.format.Format == reports.JSON:
		return verifyjob.InJSON
	}
	return verifyjob.Above
}

// prefix is p+msg, or "" when msg is "".
func prefix(p, msg string) string {
	if msg == "" {
		return ""
	}
	return p + msg
}

// ratelab in CI: verify's --junit, the GitHub Actions
// annotations and job summary, several targets in one command, Redis from
// the environment, ratelab.yaml found in the working directory, --quiet,
// a JSON object on stdout whatever happens, exit 130 on Ctrl-C.

// verifyTargets is verify's RunE: it loads the targets (ratelab.yaml from
// the working directory when none is given), verifies each in turn with
// runVerify, and writes the CI outputs of them all (ci.Collect). One exit
// code: 1 when any target failed its verification, else 2 when any could
// not be verified, else 0; Ctrl-C stops at the running target.
func verifyTargets(c *cobra.Command, f *verifyFlags, stdout, stderr io.Writer) error {
	var err error
	if f.gated, err = verifyjob.ParseGate(f.gate); err != nil {
		return flagError(c.Flags(), err)
	}
	if f.replay != "" {
		return runReplay(c, f, stdout, stderr) // its target: the flags', else the one verify.json records
	}
	if err := f.target.load(c, stderr); err != nil {
		return err
	}
	specs := f.target.specs
	f.ci.Several, f.ci.JSON = len(specs) > 1, f.format.Format == reports.JSON
	isFail := func(err error) bool { return errors.As(err, new(failError)) }
	errs := verifyjob.Each(c.Context(), specs, f.out.dir, stderr, &f.ci.Suite, isFail, func(s targets.Spec, out string) (*measure.VerifyReport, error) {
		f.target.specs, f.out.dir, f.current = []targets.Spec{s}, out, nil
		err := runVerify(c, f, stdout, stderr)
		return f.current, err
	})
	if err := f.ci.Write(stdout, stderr, func(err error) error { return usagef("--junit %s: %w", f.ci.JUnit, err) }); err != nil {
		errs = append(errs, err)
	}
	if !f.ci.Several {
		return errors.Join(errs...) // the one target's error as it was
	}
	for _, err := range errs {
		if !isFail(err) {
			fmt.Fprintln(stderr, "ratelab:", err)
		}
	}
	return outcome(f.ci.Suite.Outcome(len(specs)))
}

// outcome is the error of a verdict's message (verifyjob.Outcome,
// ci.Suite.Outcome): nil when there is none, a failError (exit 1) when
// failed, else exit 2.
func outcome(msg string, failed bool) error {
	switch {
	case failed:
		return failError{msg}
	case msg != "":
		return usagef("%s", msg)
	}
	return nil
}
