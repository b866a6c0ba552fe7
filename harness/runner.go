package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/harness/busy"
	"github.com/ratelab/ratelab/harness/callguard"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/progress"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/usercmd"
)

// ClockMode says whose clock the limiters decide on, for a whole run. The
// words (injected, Redis TIME, wall clock, virtual and real time) are those
// of algorithms.Clock, whose doc defines them once.
type ClockMode string

const (
	// VirtualClock: the harness injects exact timestamps and does not sleep;
	// a 24-hour scenario runs in seconds. Key TTLs are not exercised.
	VirtualClock ClockMode = "virtual"
	// RedisClock: real time; scripts read Redis TIME; the schedule's anchor
	// is a window boundary on the Redis server's clock.
	RedisClock ClockMode = "redis"
	// ClientClock: real time; the harness injects its own wall clock.
	ClientClock ClockMode = "client"
)

// ClockModes lists the clock modes in help order.
var ClockModes = []ClockMode{VirtualClock, RedisClock, ClientClock}

// VirtualEpoch is where virtual time starts: a virtual run's anchor is the
// first window boundary (a multiple of the window since the Unix epoch) that
// leaves room for the schedule's earliest arrival after this instant.
var VirtualEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxRunWindow is the longest window a study takes (run, replay, bench):
// ten years.
const MaxRunWindow = limit.MaxWindow

// Runner runs jobs against one Redis on one clock. Set the fields, then call
// Run; a Runner is not meant for concurrent Run calls.
type Runner struct {
	Redis redis.UniversalClient
	Clock ClockMode
	// Log receives every decision as it is made; nil discards them.
	Log *measure.DecisionLog
	// Progress receives one-line progress messages; nil discards them.
	// Each Execute also shows its decisions there as they are made
	// (internal/progress: a bar on a terminal, a line every few seconds
	// elsewhere, with the time left).
	Progress io.Writer
	// Lead is how far ahead of the first arrival a real-time run schedules
	// its anchor; zero means 300 ms.
	Lead time.Duration
	// Parallel is how many jobs a virtual-time run executes at once; zero
	// means one. Jobs must then use distinct keys.
	Parallel int
	// Pipeline, when > 0, makes a virtual-time run send each job's calls
	// pipelined, up to Pipeline per round trip, in schedule order (see
	// pipeline.go: arrivals at one instant from different clients are then
	// sent in schedule order, one of the interleavings of the concurrent
	// mode). Only for algorithms.Scripted limiters; others go one call at a
	// time. Zero: one call at a time, same-instant clients concurrently.
	// Outcomes' Sent and Recv then bracket the round trip, and each call's
	// latency is the round trip divided by its calls.
	Pipeline int
	// Expiry makes a virtual-time run emulate key TTLs on the virtual clock
	// (see expiry.go): keys expire when Redis would have expired them at the
	// virtual time of each call, never on the wall clock, and what a script
	// reads of them (TTL, PTTL, EXPIRETIME...) is virtual; each decision is
	// still one script call. A script that reads no clock then decides at
	// the call's virtual time (its DecidedAt). Implies the pipelined mode
	// (depth max(Pipeline, 1)) for Scripted limiters; it needs Redis 7.0 or
	// later (PEXPIRETIME). Off: keys expire in real time.
	Expiry bool
	// DropKeys names arrival keys whose keys a virtual-time run removes
	// once each job is over and its Sink was told End (dropKeys: Prefix + "{"
	// + key + "}", the keys its expiry companion records, the companion),
	// before the next job starts: the Redis memory of a run of many jobs is
	// then that of the Parallel jobs under way, not of every job (at L =
	// 10^5 a finished trial's sorted set is ~14 MB). For jobs whose keys
	// nothing reads afterwards. Keys of other arrival keys, keys no
	// companion records, and a removal that fails are left to the run's
	// own cleanup. Empty: the keys stay until the caller removes them.
	DropKeys []string
	// Unaligned makes a real-time run start Lead from now instead of at the
	// next window boundary (for schedules whose phase does not matter).
	Unaligned bool
	// Timeout bounds each decision call (a pipelined round trip of n
	// calls: Timeout x ceil(n/CallsPerTimeout)); zero means no bound beyond the
	// client's own timeouts. In real time a call past it fails and counts
	// as OnError says. In virtual time it only detects a Redis that hangs
	// (a decision's time does not depend on how long its call took): a
	// call past it stops the run with a *callguard.StallError, never
	// counted as a decision; with AdaptTimeout the bound grows with the
	// round trips seen. The Runner's call guard (harness/callguard)
	// applies it.
	Timeout time.Duration
	// CallsPerTimeout is how many calls of a pipelined round trip one
	// Timeout covers; zero means 16. A deeper share suits jobs whose round
	// trips wait behind other jobs' on a busy server (a replay of every
	// algorithm at once).
	CallsPerTimeout int
	// AdaptTimeout makes a virtual-time run's Timeout a floor: the bound
	// is at least callguard.DefaultFloor and callguard.DefaultFactor times
	// the typical round trip seen so far, so a slow machine (a loaded CI
	// runner) is waited for. Set it when the user did not choose the
	// timeout.
	AdaptTimeout bool
	// OnError is what a failed call counts as: FailClosed (denied, the
	// default) or FailOpen (allowed without the limiter).
	OnError ErrorPolicy
	// MaxOutage stops the run with callguard.ErrOutage when calls have
	// kept failing for this long (a Redis that is gone); a Redis that comes back sooner
	// (a restart) only costs the calls that failed. Zero means never stop.
	MaxOutage time.Duration

	// Anchored, when set, is told the anchor of a real-time run (on the
	// run's clock) and that clock minus the local clock, once chosen and
	// before the run waits for its first arrival.
	Anchored func(anchor time.Time, offset time.Duration)

	// Label names an Execute's decisions on Progress ("verify
	// sliding-log"); empty means its scenario's name, or how many
	// schedules it runs.
	Label string

	meter *progress.Meter // Execute's decisions, shown on Progress

	cancel      context.CancelCauseFunc
	expiryOnce  sync.Once
	expiryStart time.Time // the first virtual job's start (Expiry's safety TTL)
	guardOnce   sync.Once
	calls       *callguard.Guard // the call guard, built from the fields at the first call (guard)
	kill        busy.Killer      // SCRIPT KILL of ratelab's own script after a timed-out call
	failed      struct {
		mu           sync.Mutex
		calls, count int64
		first        error
	}
}

// Run runs jobs that share one window and returns one Row per job, with
// memory measured after the jobs (see Execute). Each job's Sink is told
// its outcomes as in Execute; Run also keeps them until the rows are
// summarized. A cancelled ctx stops the run; the rows then hold what was
// measured.
//
// A run some of whose calls failed returns a *CallsFailedError (when
// nothing else stopped it): the rows count them as OnError says, and the
// error says how many and the first.
func (r *Runner) Run(ctx context.Context, jobs []Job) ([]measure.Row, error) {
	_ = r.takeFailed() // count this run's calls only
	kept := make([]Collector, len(jobs))
	teed := slices.Clone(jobs)
	for i := range teed {
		teed[i].Sink = tee{&kept[i], jobs[i].Sink}
	}
	results, runErr := r.Execute(ctx, teed)
	if ferr := r.takeFailed(); ferr != nil && runErr == nil {
		runErr = ferr
	}
	rows := make([]measure.Row, 0, len(results))
	for i, jr := range results {
		jr.Job = jobs[i]
		outs := kept[i].Outcomes
		slices.SortStableFunc(outs, func(a, b Outcome) int { return cmp.Compare(a.Seq, b.Seq) })
		row := summarize(jr, outs, r.Clock)
		kept[i].Outcomes = nil
		if Unanswered(runErr) {
			rows = append(rows, row) // no memory to read from a Redis that does not answer
			continue
		}
		mctx, cancel := server.CleanupContext(ctx, r.cleanupTimeout())
		keys, err := server.ScanKeys(mctx, r.Redis, jr.Job.Prefix)
		if err == nil {
			row.Keys, row.KeyNameBytes = int64(len(keys)), LongestName(keys)
			row.MemoryBytes, err = server.MemoryUsage(mctx, r.Redis, keys)
		}
		cancel()
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("memory of %s: %w", jr.Job.Limiter.Name(), err)
		}
		rows = append(rows, row)
	}
	return rows, runErr
}

// tee is a Sink that tells keep, then next (when set), each call.
type tee struct {
	keep *Collector
	next Sink
}

func (t tee) Anchor(a time.Time) {
	if t.next != nil {
		t.next.Anchor(a)
	}
}

func (t tee) Add(o Outcome) error {
	_ = t.keep.Add(o)
	if t.next != nil {
		return t.next.Add(o)
	}
	return nil
}

func (t tee) End() {
	if t.next != nil {
		t.next.End()
	}
}

// Execute sends every job's arrivals to its limiter and tells each job's
// Sink what each call answered (Sink says in which order and from which
// goroutine). In virtual time the jobs run Parallel at a time (default
// one after another), each arrival in order, except that arrivals at the
// same instant from different clients are sent concurrently (without
// Pipeline). In real time (redis or client clock) all jobs run at once
// against one anchor, chosen from the first job's first arrival, one
// goroutine per simulated client per job, so every job sees the same
// boundary. Every decision is streamed to Log. The results are in the
// order of jobs; the error is a job without Limit.Window (before any
// call), the cause that stopped the run (a Sink's, a stall, an outage,
// ctx's), else the decision log's.
func (r *Runner) Execute(ctx context.Context, jobs []Job) ([]JobResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	for i, j := range jobs {
		if err := j.check(); err != nil {
			return nil, fmt.Errorf("job %d (%s): %w", i, j.Scenario, err)
		}
	}
	outer := ctx
	ctx, cancel := r.begin(ctx)
	defer cancel(nil)
	res := make([]JobResult, len(jobs))
	var total int64
	for i := range jobs {
		res[i] = JobResult{Job: jobs[i], Latency: NewHist()}
		total += int64(jobs[i].Calls)
	}
	clock := cmp.Or(r.Clock, VirtualClock)
	desc := fmt.Sprintf("%s, %s clock", jobs[0].Scenario, clock)
	if len(jobs) > 1 && jobs[len(jobs)-1].Scenario != jobs[0].Scenario {
		desc = fmt.Sprintf("%d schedules, %s clock", len(jobs), clock)
	}
	if r.Label != "" {
		desc = fmt.Sprintf("%s, %s clock", r.Label, clock)
	}
	r.meter = progress.Start(r.Progress, desc, "decisions", total)
	defer r.meter.Stop()
	switch r.Clock {
	case VirtualClock, "":
		sem := make(chan struct{}, max(r.Parallel, 1))
		var wg sync.WaitGroup
		for i := range jobs {
			sem <- struct{}{}
			wg.Add(1)
			go func(jr *JobResult) {
				defer func() { <-sem; wg.Done() }()
				start := time.Now()
				tl := &teller{sink: jr.Job.Sink, stop: r.stop}
				jr.Anchor, jr.Skipped = r.runVirtual(ctx, jr.Job, tl, jr.Latency)
				jr.Duration = time.Since(start)
				tl.end()
				r.dropKeys(ctx, jr.Job)
			}(&res[i])
			if ctx.Err() != nil {
				break
			}
		}
		wg.Wait()
	case RedisClock, ClientClock:
		arrivals := make([][]scenarios.Arrival, len(jobs))
		for i := range jobs {
			arrivals[i] = collect(jobs[i])
		}
		anchor, offset, err := r.realAnchor(ctx, jobs[0].Scenario, jobs[0].Limit.Window, arrivals[0])
		if err != nil {
			return nil, err
		}
		if r.Anchored != nil {
			r.Anchored(anchor, offset)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range jobs {
			res[i].Anchor = anchor
			wg.Add(1)
			go func(jr *JobResult, arr []scenarios.Arrival) {
				defer wg.Done()
				tl := &teller{sink: jr.Job.Sink, stop: r.stop}
				tl.anchor(anchor)
				r.runReal(ctx, jr.Job, arr, tl, anchor, offset, jr.Latency)
				jr.Duration = time.Since(start)
				tl.end()
			}(&res[i], arrivals[i])
			arrivals[i] = nil
		}
		wg.Wait()
	default:
		return nil, fmt.Errorf("unknown clock %q", r.Clock)
	}
	return res, r.finish(ctx, outer)
}

// begin starts an Execute, Adaptive or Drive: the context it runs in,
// cancelled with the cause that stops the run (stop, a stall), and with
// Timeout the threshold of a busy script read (busy.Killer).
func (r *Runner) begin(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	r.cancel = cancel
	if r.Timeout > 0 && r.Redis != nil {
		// read while the server answers: a busy one serves no CONFIG GET
		tctx, tcancel := context.WithTimeout(ctx, max(r.Timeout, time.Second))
		r.kill.ReadThreshold(tctx, r.Redis)
		tcancel()
	}
	return ctx, cancel
}

// finish is the error a run begun with begin(outer) ends with: the cause
// that stopped it (outer's when the caller cancelled), else the decision
// log's.
func (r *Runner) finish(ctx, outer context.Context) error {
	var err error
	if ctx.Err() != nil {
		err = context.Cause(ctx)
		if outer.Err() != nil {
			err = context.Cause(outer)
		}
	}
	if r.Log != nil {
		if lerr := r.Log.Flush(); lerr != nil && err == nil {
			err = fmt.Errorf("decisions log: %w", lerr)
		}
	}
	return err
}

// NewHist returns an empty latency histogram in µs (1 µs..60 s, 3
// significant digits), the one every row's latency figures come from.
func NewHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// runVirtual runs job j in virtual time, telling tl its anchor and each
// outcome in the arrivals' order and h each call's latency; it returns
// the anchor and how many arrivals thinning left out. It ranges over
// j.Arrivals once: a pipelined job reads them as its round trips go
// (runStreamed; thinned, a burst at a time: runThinned); the others' are
// collected first.
func (r *Runner) runVirtual(ctx context.Context, j Job, tl *teller, h *hdrhistogram.Histogram) (anchor time.Time, skipped int64) {
	if r.pipelined(j) {
		if !r.thins(j) {
			return r.runStreamed(ctx, j, tl, func(a scenarios.Arrival) time.Time { return virtualAnchor(a.At, j.Limit.Window) }, h), 0
		}
		a, _, next, stop := peek(j.Arrivals)
		defer stop()
		anchor = virtualAnchor(a.At, j.Limit.Window)
		tl.anchor(anchor)
		return anchor, r.runThinned(ctx, j, next, tl, anchor, h)
	}
	arr := collect(j)
	if len(arr) > 0 {
		anchor = virtualAnchor(arr[0].At, j.Limit.Window)
	} else {
		anchor = virtualAnchor(0, j.Limit.Window)
	}
	tl.anchor(anchor)
	r.runInstants(ctx, j, arr, tl, anchor, h)
	return anchor, 0
}

// runInstants decides arr, job j's arrivals, in virtual time one call at
// a time, instant by instant: the arrivals of different clients at one
// instant go concurrently (a client-side limiter's in turn: raceInstant),
// and tl is told their outcomes in order once the instant is decided.
func (r *Runner) runInstants(ctx context.Context, j Job, arr []scenarios.Arrival, tl *teller, anchor time.Time, h *hdrhistogram.Histogram) {
	var out []Outcome // out[seq-n] is seq's outcome, of the instant under way
	n := 0
	for n < len(arr) && ctx.Err() == nil {
		// the arrivals at this instant; different clients go concurrently
		end := n + 1
		for end < len(arr) && arr[end].At == arr[n].At {
			end++
		}
		out = slices.Grow(out[:0], end-n)[:end-n]
		at := algorithms.At(anchor.Add(arr[n].At))
		byClient := map[int][]int{}
		for seq := n; seq < end; seq++ {
			byClient[arr[seq].Client] = append(byClient[arr[seq].Client], seq)
		}
		cs, clientSide := j.Limiter.(custom.Gated)
		if len(byClient) == 1 {
			for seq := n; seq < end; seq++ {
				out[seq-n] = r.decide(ctx, j, seq, arr[seq], anchor, at)
			}
		} else if clientSide && r.Redis != nil { // clients in turn, round trip by round trip: deterministic
			r.raceInstant(ctx, j, arr, cs, byClient, anchor, at, out, n)
		} else {
			var wg sync.WaitGroup
			for _, seqs := range byClient {
				wg.Add(1)
				go func(seqs []int) {
					defer wg.Done()
					for _, seq := range seqs {
						out[seq-n] = r.decide(ctx, j, seq, arr[seq], anchor, at)
					}
				}(seqs)
			}
			wg.Wait()
		}
		for k := range out {
			o := &out[k]
			_ = h.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
			tl.add(*o)
		}
		n = end
	}
}

// guard is the Runner's call guard, built from its fields at the first
// call: Timeout per CallsPerTimeout calls; in virtual time a call
// past its bound is a stall, and AdaptTimeout raises the bound; MaxOutage.
func (r *Runner) guard() *callguard.Guard {
	r.guardOnce.Do(func() {
		virtual := r.Clock == VirtualClock || r.Clock == ""
		r.calls = callguard.New(callguard.Config{Timeout: r.Timeout, PerTimeout: cmp.Or(r.CallsPerTimeout, pipelineTimeoutCalls),
			Stall: virtual, Adapt: r.AdaptTimeout && virtual, MaxOutage: r.MaxOutage})
	})
	return r.calls
}

// decide makes the call of arrival a (index seq of job j) and streams its
// record.
func (r *Runner) decide(ctx context.Context, j Job, seq int, a scenarios.Arrival, anchor time.Time, at algorithms.Clock) Outcome {
	key := j.Prefix + "{" + a.Key + "}"
	if t, ok := at.Injected(); ok && r.Clock == VirtualClock {
		at = algorithms.At(t.Add(j.ClockSkew(a.Client)))
	}
	trip := r.guard().Begin(ctx, 1)
	o := Outcome{Seq: seq, Arrival: a, Sent: trip.Sent}
	o.Decision, o.Err = j.Limiter.Allow(trip.Ctx, key, a.Cost, at)
	serr := trip.End(o.Err)
	o.Recv = trip.Recv
	r.ended(ctx, &trip, j.Limiter, serr)
	r.settle(o.Err)
	r.record(j, anchor, &o)
	return o
}

// ended acts on a round trip to lim that trip.End closed with serr: a
// script of lim's that may still run past the bound is stopped (killBusy,
// unless lim's scripts cannot loop), and a stall stops the run (a slow
// machine is waited for; a hang is not).
func (r *Runner) ended(ctx context.Context, trip *callguard.Trip, lim algorithms.Limiter, serr error) {
	if trip.TimedOut && r.Redis != nil && !lim.Capabilities().LoopFree {
		r.killBusy(ctx, trip.Sent)
	}
	if serr != nil && ctx.Err() == nil && r.cancel != nil {
		r.cancel(serr)
	}
}

// settle is what a call's error (nil: success) does to the run: a
// *custom.ScriptError (a reply the target's predicate cannot judge, a
// key it cannot build: every call would fail alike), a command of the
// user's the policy refuses (*usercmd.Refusal: it was not sent) or a
// refusal by the guard stops it at once; a cost over the limit is the
// caller's; other errors go to the call guard, which notes a BUSY reply
// (another client's script: a script of ratelab's is stopped by the call
// that sent it timing out, killBusy) and stops the run after MaxOutage.
func (r *Runner) settle(err error) {
	var se *custom.ScriptError
	var ref *usercmd.Refusal
	switch {
	case errors.As(err, &se), errors.As(err, &ref):
		r.stop(err)
	case guard.IsRefusal(err):
		// the user's script tried to touch what is not ratelab's: stop
		r.stop(fmt.Errorf("%w: %v", guard.ErrRefused, err))
	case errors.Is(err, algorithms.ErrCostExceedsLimit):
	default:
		if oerr := r.guard().Note(err); oerr != nil {
			r.stop(oerr)
		}
	}
}

// stop cancels the run under way with cause err.
func (r *Runner) stop(err error) {
	if r.cancel != nil {
		r.cancel(err)
	}
}

// record settles outcome o of job j: an errored decision counts at its
// scheduled time, as OnError says; then it is streamed to Log.
func (r *Runner) record(j Job, anchor time.Time, o *Outcome) {
	r.countCall(o.Err)
	if o.Err != nil {
		// an errored decision counts at its scheduled time, as the policy says
		o.Decision = algorithms.Decision{DecidedAt: anchor.Add(o.Arrival.At), Allowed: r.OnError == FailOpen}
	}
	if r.Log != nil {
		rec := o.Record(j.Limiter.Name(), j.Scenario)
		_ = r.Log.Write(&rec) // the log keeps its first error; its Close returns it
	}
	r.meter.Add(1)
}

// virtualAnchor is the first multiple of the window w after VirtualEpoch
// minus the earliest arrival's offset first, when negative.
func virtualAnchor(first, w time.Duration) time.Time {
	return AlignUp(VirtualEpoch.Add(max(-first, 0)), w)
}

// AlignUp returns the first multiple of w (>= 1µs) since the Unix epoch at
// or after t, in UTC: the window boundary schedules are anchored to.
func AlignUp(t time.Time, w time.Duration) time.Time {
	us, wus := t.UnixMicro(), w.Microseconds()
	n := (us + wus - 1) / wus
	return time.UnixMicro(n * wus).UTC()
}

// LongestName is the length of the longest of names, bytes; 0 for none.
func LongestName(names []string) int {
	n := 0
	for _, s := range names {
		n = max(n, len(s))
	}
	return n
}
