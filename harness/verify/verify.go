// Package verify proves or refutes "never more than Limit in any Window" for
// one rate limiter — a built-in algorithm, a user's Lua script or an HTTP
// endpoint — by driving it with every adversarial family of
// scenarios.AdversarialPlan and judging what it accepted: the study behind
// `ratelab verify`, the CI gate.
//
// A target that takes an injected clock runs every family in virtual time:
// exact, pipelined, with key TTLs emulated on the virtual clock, so a
// verification takes about as long at a window of a day as at a second
// (Config.RealTime adds the real-time families again on the wall clock).
// A script that reads no clock at all (its clock is key expiry: INCR +
// PEXPIRE) runs in virtual time too, its TTLs on the virtual clock. One
// that reads its own clock runs in real time and is judged
// conservatively, so a correct limiter is never refuted.
package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/callguard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/vclock"
)

// Defaults of the zero values of Config.
const (
	DefaultClients     = 8
	DefaultRealTimeMax = time.Minute
	DefaultTimeout     = 500 * time.Millisecond
	DefaultMaxOutage   = 2 * time.Second
	// DefaultBudget is the searching adversary's budget (Config.Budget).
	DefaultBudget = 3 * time.Second
	// MaxBudget is the largest Config.Budget.
	MaxBudget = 10 * time.Minute
	// MaxClients is the most concurrent clients Config.Clients may ask for.
	MaxClients = 256
)

// DefaultMinFidelity is the minimum fidelity a command line asks for
// unless told otherwise (`ratelab verify --min-fidelity`): a limiter that
// accepts under half of what an exact sliding log accepts under overload
// is STARVED. Shaping limiters (a GCRA with burst 1, nginx without burst:
// 0.76-0.80) pass. Config.MinFidelity's zero value is off.
const DefaultMinFidelity = 0.5

// MaxLimit is the largest limit verify takes: its trials hold tens of
// arrivals per unit of limit (L = 10,000 verifies in about 26 s here).
const MaxLimit = 100_000

// Config is what Run verifies and how. Limits are required; the other
// fields' zero values mean what each one says. Validate names a bad field
// by the name given in parentheses (e.g. "max_outage").
type Config struct {
	// Limits ("limits"; with one limit "limit", "window", "precision") are
	// the property to check: for every limit at once, at most Count cost
	// units accepted in any window of length Window; each gets the
	// families' trials. At least one; each valid (limit.Limit.Validate)
	// with Count <= MaxLimit. The first is the primary: its Window sets the
	// families' timing and the ranges of Skew and SkewProbe. They are the
	// one source of the limit: Run judges against them, never against the
	// limiter's own configuration (which a black box such as an HTTP
	// endpoint does not expose); build the limiter from them
	// (targets.Spec.Build) so the two agree. Precision reaches the limiter
	// only: the property does not depend on it.
	Limits []limit.Limit
	// Skew ("skew"), when > 0, adds the skewed-client-clock family to the
	// verdict, with client clocks this far off each way; in 0..Window/2.
	// Without it the family still runs with SkewProbe and is reported as a
	// sensitivity figure only.
	Skew time.Duration
	// SkewProbe ("skew_probe") is the delta of the sensitivity figure, in
	// 0..Window/2; zero means Window/100.
	SkewProbe time.Duration
	// RealTime runs the families that exercise key TTLs and real
	// concurrency also in real time, on the wall clock, as an end-to-end
	// confirmation of a target that takes an injected clock (false: nothing
	// waits on the wall clock). A target that reads its own clock always
	// runs in real time.
	RealTime bool
	// RealTimeMax ("real_time_max"): real-time families run only when the
	// window is at most this long (they take about two windows each); zero
	// means DefaultRealTimeMax (1 minute).
	RealTimeMax time.Duration
	// MinFidelity ("min_fidelity"), in 0..1, makes liveness part of the
	// verdict: under sustained overload accepted / ideal (an exact sliding
	// log) must stay at or above it, else the verdict is Starved. Zero:
	// fidelity is reported (and a family under 0.9 marked starved) but the
	// verdict is about the limit alone. `ratelab verify` asks
	// DefaultMinFidelity unless told.
	MinFidelity float64
	// CheckIsolation makes isolation part of the verdict (Interfered when
	// traffic on one key changed the answers on another). False: reported
	// only.
	CheckIsolation bool
	// Clients ("clients") is the number of concurrent clients of the
	// concurrency families, in 0..MaxClients; zero means DefaultClients (8).
	Clients int
	// Seed seeds the random trials: the same seed gives the same trials.
	Seed int64
	// ShrinkBudget ("shrink_budget") is how many calls shrinking the
	// counter-example may make (see shrink.go); zero means
	// DefaultShrinkBudget, negative: the counter-example is shown as found,
	// not shrunk (it still gets its trace when replayable).
	ShrinkBudget int
	// TargetSHA256 is the hex SHA-256 of the user's script under test,
	// recorded in the report's Header to tie a verdict to the script; empty
	// for a built-in algorithm or an HTTP endpoint. Not checked.
	TargetSHA256 string
	// RunID names the verification's keys "ratelab:<RunID>:verify:..."
	// (removed at the end); empty picks a fresh one (server.NewRunID).
	RunID string
	// Timeout ("timeout") bounds each decision call; zero means
	// DefaultTimeout (500 ms) with AdaptTimeout set: a caller who did not
	// choose a bound gets one that only detects hangs. MaxOutage ("max_outage") stops the
	// verification with an error wrapping callguard.ErrOutage when calls keep
	// failing that long; zero means DefaultMaxOutage (2 s). So a Redis that
	// dies or hangs never holds a CI job. A failed call is an error in the
	// report, never a verdict. Neither may be negative.
	Timeout   time.Duration
	MaxOutage time.Duration
	// Budget ("budget") is the searching adversary's budget: it may make
	// Budget.Seconds() * SearchRate calls, a count, so that its result
	// depends on the seed and the target, never on the machine's speed
	// (about Budget of wall time on a 2-core machine; less on a faster
	// one). Zero means DefaultBudget (3 s); negative turns the search off;
	// at most MaxBudget. NoDefaults does not apply to it.
	Budget time.Duration
	// AdaptTimeout ("adapt_timeout"), for the virtual-time trials, makes
	// Timeout the floor of a bound that grows with the round trips seen
	// (harness.Runner.AdaptTimeout): a loaded machine is waited for, a
	// Redis that hangs still ends the verification (a *callguard.StallError,
	// never a verdict). Set it when the user did not choose the timeout
	// (WithDefaults sets it for a zero Timeout).
	AdaptTimeout bool
	// FullBursts sends every request of every trial. False: at a limit of
	// ThinMinLimit or more, the safety trials' bursts that a limiter
	// denies ThinAfter times in a row are probed instead of sent whole
	// (harness.Job.Thin; docs/verify.md says what that keeps and what it
	// may miss), which roughly halves the decisions of the burst families.
	FullBursts bool
	// NoDefaults refuses a zero Timeout, MaxOutage or Clients instead of
	// taking the default: for a caller, such as a command line, whose
	// values already carry their defaults, so that a zero is a mistake.
	NoDefaults bool
	// Log receives every decision; nil discards them. Progress receives
	// progress lines; nil discards them.
	Log      *measure.DecisionLog
	Progress io.Writer
}

// Primary is the first of Limits, the one whose window sets the families'
// timing; the zero Limit when there is none.
func (c Config) Primary() limit.Limit {
	if len(c.Limits) == 0 {
		return limit.Limit{}
	}
	return c.Limits[0]
}

// Validate checks every field against the ranges documented on Config and
// returns the first bad one as a *field.Error naming it (field.Name), e.g.
// "window: must be >= 1ms, got 1µs".
func (c Config) Validate() error {
	if len(c.Limits) == 0 {
		return field.Errorf("limit", "none given")
	}
	if err := limit.ValidateList(c.Limits); err != nil {
		return err
	}
	for i, l := range c.Limits {
		if l.Count > MaxLimit {
			err := field.Errorf("limit", "at most %d (the families send tens of requests per unit of limit), got %d", MaxLimit, l.Count)
			if len(c.Limits) > 1 {
				err = &field.Error{Name: fmt.Sprintf("limits[%d]", i+1), Err: err}
			}
			return err
		}
	}
	window := c.Primary().Window
	switch {
	case c.Skew < 0 || c.Skew >= window/2:
		return field.Errorf("skew", "must be in 0..window/2, got %s", c.Skew)
	case c.SkewProbe < 0 || c.SkewProbe >= window/2:
		return field.Errorf("skew_probe", "must be in 0..window/2, got %s", c.SkewProbe)
	case c.RealTimeMax < 0:
		return field.Errorf("real_time_max", "must be >= 0, got %s", c.RealTimeMax)
	case c.Timeout < 0 || c.NoDefaults && c.Timeout == 0:
		return field.Errorf("timeout", "must be > 0, got %s", c.Timeout)
	case c.MaxOutage < 0 || c.NoDefaults && c.MaxOutage == 0:
		return field.Errorf("max_outage", "must be > 0, got %s", c.MaxOutage)
	case c.Clients < 0 || c.Clients > MaxClients || c.NoDefaults && c.Clients == 0:
		return field.Errorf("clients", "must be in 1..%d, got %d", MaxClients, c.Clients)
	case c.Budget > MaxBudget:
		return field.Errorf("budget", "must be at most %s, got %s", MaxBudget, c.Budget)
	case !(c.MinFidelity >= 0 && c.MinFidelity <= 1): // NaN too
		return field.Errorf("min_fidelity", "must be in 0..1, got %g", c.MinFidelity)
	}
	return nil
}

// shrinkBudget is ShrinkBudget with its default; zero when off.
func (c Config) shrinkBudget() int {
	switch {
	case c.ShrinkBudget < 0:
		return 0
	case c.ShrinkBudget == 0:
		return DefaultShrinkBudget
	}
	return c.ShrinkBudget
}

// livenessFloor is the fidelity under which an overload trial is starved:
// MinFidelity when set, else 0.9 (reported, not gated).
func (c Config) livenessFloor() float64 {
	if c.MinFidelity > 0 {
		return c.MinFidelity
	}
	return 0.9
}

// WithDefaults returns c with its zero fields set to their defaults:
// Clients DefaultClients, RealTimeMax DefaultRealTimeMax, Timeout
// DefaultTimeout (adapted: AdaptTimeout), MaxOutage DefaultMaxOutage,
// Budget DefaultBudget. Run calls it.
func (c Config) WithDefaults() Config {
	c.Clients = cmp.Or(c.Clients, DefaultClients)
	c.RealTimeMax = cmp.Or(c.RealTimeMax, DefaultRealTimeMax)
	if c.Timeout == 0 {
		c.Timeout, c.AdaptTimeout = DefaultTimeout, true
	}
	c.MaxOutage = cmp.Or(c.MaxOutage, DefaultMaxOutage)
	c.Budget = cmp.Or(c.Budget, DefaultBudget)
	return c
}

// skewDelta is how far off the skew family sets client clocks: Skew when
// it is part of the verdict, else SkewProbe, else Window/100.
func (c Config) skewDelta() time.Duration {
	switch {
	case c.Skew > 0:
		return c.Skew
	case c.SkewProbe > 0:
		return c.SkewProbe
	}
	return c.Primary().Window / 100
}

// Run drives lim with every adversarial family and judges what it accepted:
// a violation when more than a limit's Count was accepted within one of
// its windows, for any of cfg.Limits; with cfg.MinFidelity,
// starvation when accepted / ideal falls under it under sustained overload;
// with cfg.CheckIsolation, interference when one key's traffic changed the
// answers on another. It never cries wolf:
// decision times are the limiter's own when it takes an injected clock
// (the whole µs the script was handed, judged on (t-Window, t] as the
// script keeps it; a set counts only when it fits in Window minus the
// resolution when the script reads a coarser step, 1 ms for {now_ms});
// otherwise a set of decisions counts as inside one window only when the
// last answer came less than Window - max(resolution, 1µs) after the
// first send.
//
// The report's counter-example is the worst failure found (the highest
// accepted / limit), shrunk to a minimal trace that still fails when it
// was found in virtual time, with its Trace for Replay (see shrink.go;
// cfg.ShrinkBudget bounds the calls).
//
// rd is the Redis lim runs on (for its keys and their removal); nil for a
// target that holds no keys in Redis (an HTTP endpoint). Build lim from
// cfg.Limits (targets.Spec.Build).
//
// Errors: an invalid cfg returns Validate's error; a failing probe call (the
// script does not compile, the reply has the wrong shape, Redis is gone)
// returns an error before any trial (a *field.Error wrapping a
// *custom.InputsError when the script reads KEYS or ARGV it was not given,
// or its reply cannot be judged: lim's Explain); an outage (see Config.MaxOutage) or a
// cancelled ctx stops the trials with an error. Errors of single calls
// (a script error, a timeout, a reply of the wrong shape) are counted in
// the report and make its verdict measure.Inconclusive, never Holds nor a
// failure (VerifyReport.Reason gives the count and the first). The keys are removed at the end, also after ctx
// is cancelled; when that fails, cfg.Progress is told which keys are left
// and the command that removes them (harness.Session.RemoveKeysOrSay), and
// they expire with their TTLs. Concurrent calls are safe when their RunIDs
// differ (an empty RunID is a fresh one).
//
// An error, or the first failed call of an inconclusive report, that a
// state of the server caused (out of memory, a read-only replica, the
// connection closed by the server) names that state first
// (harness.Explain).
func Run(ctx context.Context, rd *server.Redis, lim algorithms.Limiter, cfg Config) (*measure.VerifyReport, error) {
	rep, err := run(ctx, rd, lim, cfg)
	if rd == nil {
		return rep, err
	}
	if rep != nil && rep.Errors > 0 && len(rep.ErrorSamples) > 0 {
		first := errors.New(rep.ErrorSamples[0])
		if ce := server.Cause(first); ce != nil {
			rep.ErrorSamples[0] = harness.Explain(ctx, rd, first).Error() // with the figures
		}
	}
	return rep, harness.Explain(ctx, rd, err)
}

func run(ctx context.Context, rd *server.Redis, lim algorithms.Limiter, cfg Config) (*measure.VerifyReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	s := harness.NewSession(rd, cfg.RunID, cfg.Timeout)
	st := &study{lim: lim, caps: lim.Capabilities(), cfg: cfg, prefix: s.Prefix + "verify:",
		limit: cfg.Primary(), limits: cfg.Limits, header: header(s, cfg)}
	if a, ok := lim.(AbsoluteExpirer); ok {
		st.absolute = a.AbsoluteExpiries()
	}
	if rd != nil {
		st.rdb = rd.Client
		st.expiryClock = st.onExpiryClock()
		defer s.RemoveKeysOrSay(ctx, cfg.Progress) // a few round trips, even after Ctrl-C
		if err := s.Start(ctx); err != nil {       // clean skips the live verification
			return nil, fmt.Errorf("register the verification: %w", err)
		}
	}
	p := st.plan()
	st.warnRealTime(p) // realtime.go
	ctx, guard, err := s.Guard(ctx, p.estimateBytes(), cfg.Progress)
	if err != nil {
		return nil, err
	}
	defer func() { _ = guard() }() // stops the watch on every path; GuardErr below takes its error

	// one probe decision: a script that does not compile or answers in the
	// wrong shape is an error, not a verdict
	threshold := busy.DefaultThreshold
	if rd != nil { // read while the server answers: a busy one serves no CONFIG GET
		tctx, tcancel := context.WithTimeout(ctx, max(cfg.Timeout, time.Second))
		threshold, _ = busy.Threshold(tctx, rd.Client)
		tcancel()
	}
	probeBound := cfg.Timeout
	if cfg.AdaptTimeout && st.caps.InjectsTime {
		probeBound = max(probeBound, callguard.DefaultFloor)
	}
	pctx, cancel := context.WithTimeout(ctx, probeBound)
	sent := time.Now()
	_, err = lim.Allow(pctx, st.prefix+"{probe}", 1, algorithms.At(harness.VirtualEpoch))
	cancel()
	if err != nil && rd != nil && server.IsTimeout(err) && !st.caps.LoopFree {
		// a script that never returns: stop it, never leave the user's Redis BUSY
		// (only if it is ratelab's: another client's script is left alone)
		if found, kerr := busy.Kill(ctx, rd.Client, sent, busy.Config{Threshold: threshold}); found != busy.NotBusy {
			return nil, found.Err(cfg.Timeout)
		} else if kerr != nil {
			return nil, fmt.Errorf("%w; SCRIPT KILL: %v", err, kerr)
		}
	}
	if ex, ok := lim.(explainer); ok {
		err = ex.Explain(err) // a script that reads arguments it was not given: say which
	}
	if err == nil && !st.caps.InjectsTime {
		err = st.answersFit(ctx, time.Since(sent), probeBound)
	}
	if err != nil {
		return nil, harness.GuardErr(guard, err)
	}
	res, err := st.runTrials(ctx, p)
	if err = harness.GuardErr(guard, err); err != nil {
		return nil, err
	}
	rep := st.summarize(p, res)
	st.markFromHit(rep)
	if err := st.race(ctx, rep); err != nil { // a client-side target's interleavings (race.go)
		return nil, harness.GuardErr(guard, err)
	}
	if rep.Errors == 0 {
		if err := harness.GuardErr(guard, st.shrink(ctx, rep)); err != nil {
			return nil, fmt.Errorf("shrink the counter-example: %w", err)
		}
	}
	st.parts(rep)
	rep.DurationMS, rep.Complete, rep.Error = s.End(nil)
	return rep, nil
}

// explainer is a limiter that can say what its first call's error means
// for the user (custom.ScriptLimiter.Explain: the KEYS and ARGV a script
// reads and was not given).
type explainer interface{ Explain(error) error }

// Incomplete is the report of a verification of lim that Run stopped with
// err before a verdict (started is when Run was called; rd is nil for a
// target without Redis): the target, the limit and the Header, with
// Complete false and err's text, and nothing measured. For writing
// verify.json also when there is no verdict.
func Incomplete(rd *server.Redis, lim algorithms.Limiter, cfg Config, started time.Time, err error) *measure.VerifyReport {
	s := harness.NewSession(rd, cfg.WithDefaults().RunID, 0)
	s.Started = started.UTC()
	rep := &measure.VerifyReport{Header: header(s, cfg.WithDefaults()), Target: lim.Name(), LimitDesc: lim.Describe(),
		Limit: cfg.Primary().Count, WindowMS: cfg.Primary().Window.Milliseconds()}
	rep.DurationMS, rep.Complete, rep.Error = s.End(err)
	return rep
}

// header is the Header of a verification of cfg (with its defaults) in s:
// what reproduces its trials (seed, clients, skew, every limit, the
// script's digest).
func header(s *harness.Session, cfg Config) measure.Header {
	return s.Header("verify", measure.Repro{Seed: cfg.Seed, Clients: cfg.Clients,
		SkewMS: float64(cfg.Skew.Microseconds()) / 1000, Limits: cfg.Limits,
		TargetSHA256: cfg.TargetSHA256})
}

// study is one verification under way: the target, what it can take, the
// configuration with its defaults, and where its keys live.
type study struct {
	lim  algorithms.Limiter
	caps algorithms.Capabilities
	cfg  Config
	// limit is cfg's primary limit; limits are cfg.Limits: what every
	// trial is judged against (Precision plays no part).
	limit  limit.Limit
	limits []limit.Limit
	// absolute are the target's absolute key expiries (AbsoluteExpirer).
	absolute []vclock.AbsoluteExpiry
	// rdb holds the target's keys; nil for a target without Redis keys.
	rdb redis.UniversalClient
	// expiryClock: the target reads no clock, and runs in virtual time all
	// the same, the clock reaching it through key expiry alone (caps then
	// say InjectsTime, at key expiry's 1 ms resolution): see onExpiryClock.
	expiryClock bool
	prefix      string
	// header is the report's Header (Run fills its end).
	header measure.Header
	// chosen is the judgement whose failure is the report's
	// counter-example (summarize), shrunk then (shrink).
	chosen *trialResult
	// perLimit are, with several limits, the judgements whose failures
	// are each limit's counter-example (by index; nil: it holds).
	perLimit []*trialResult
	// starved is the worst starvation found (the lowest fidelity), gated
	// or not; livenessTrials counts the liveness judgements (parts).
	starved        *measure.CounterExample
	livenessTrials int
}

// onExpiryClock reports whether the target reads no clock and still runs
// in virtual time: a script on Redis (algorithms.Scripted) that takes no
// time and calls no TIME, without Config.RealTime (which keeps such a
// target on the wall clock). Time then reaches it only through its keys'
// TTLs, which the runner's expiry emulation (harness.Runner.Expiry) keeps
// on the virtual clock: a fixed window from the first hit (INCR + PEXPIRE)
// is judged at W = 24 h as fast as at 1 s. It sets caps accordingly.
func (s *study) onExpiryClock() bool {
	if s.caps.InjectsTime || !s.caps.UsesKeys || s.cfg.RealTime || !s.emulated() {
		return false
	}
	s.caps.InjectsTime, s.caps.Resolution = true, time.Millisecond
	return true
}

// markFromHit marks rep's counter-examples (the report's and each
// limit's) FromHit when the target reads no clock (expiryClock): its
// windows can only start at a key's hit.
func (s *study) markFromHit(rep *measure.VerifyReport) {
	if !s.expiryClock {
		return
	}
	if rep.CounterExample != nil {
		rep.CounterExample.FromHit = true
	}
	for k := range rep.PerLimit {
		if c := rep.PerLimit[k].CounterExample; c != nil {
			c.FromHit = true
		}
	}
}

// AbsoluteExpirer is a limiter that can say which absolute key expiries
// (EXPIREAT, PEXPIREAT, SET ... EXAT/PXAT, RESTORE ... ABSTTL) its script
// uses: on virtual time these compare the virtual clock with Redis's real
// one, so Run leaves the families that exercise key TTLs out of virtual
// time and says so in the report (RealTime still runs them on the wall
// clock). Checked on the target with a type assertion; a limiter without
// the method has none.
type AbsoluteExpirer interface {
	AbsoluteExpiries() []vclock.AbsoluteExpiry
}

// limitsDesc renders the limits checked: "20 per 1s", or several joined.
func (s *study) limitsDesc() string {
	parts := make([]string, len(s.limits))
	for i, l := range s.limits {
		parts[i] = l.String()
	}
	return strings.Join(parts, " and ")
}

// fitProbes is how many probe calls answersFit makes at most.
const fitProbes = 5

// ErrNoAnswerFits is wrapped by the error of a verification whose target
// answered no probe call within the shortest window.
var ErrNoAnswerFits = errors.New("no answer fit one window")

// answersFit checks that a target judged on the wall clock (one that does
// not take an injected time: an HTTP endpoint, a script on Redis's clock)
// can answer within the shortest window: a decision is placed in time
// between its call's send and its answer, so a target whose every answer
// takes a window or longer gives nothing that can be judged, and its
// trials would only run long to say HOLDS. took is the first probe's
// round trip; up to fitProbes-1 more are made (each bounded by bound) until
// one answers within the window. Errors: a probe call's error, or one
// wrapping ErrNoAnswerFits.
func (s *study) answersFit(ctx context.Context, took, bound time.Duration) error {
	w := s.limit.Window
	for _, l := range s.limits {
		w = min(w, l.Window)
	}
	fastest := took
	for i := 1; i < fitProbes && fastest >= w; i++ {
		pctx, cancel := context.WithTimeout(ctx, bound)
		sent := time.Now()
		_, err := s.lim.Allow(pctx, fmt.Sprintf("%s{probe%d}", s.prefix, i), 1, algorithms.At(harness.VirtualEpoch))
		cancel()
		if err != nil {
			return err
		}
		fastest = min(fastest, time.Since(sent))
	}
	if fastest < w {
		return nil
	}
	return fmt.Errorf("%s: %w: %d probe calls each took a window (%s) or longer (the fastest %s), so no decision can be placed in a window and nothing could be judged; verify it with a longer window",
		s.lim.Name(), ErrNoAnswerFits, fitProbes, w, fastest.Round(time.Millisecond))
}
