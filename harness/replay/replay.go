// Package replay is the study behind `ratelab run --traffic`: it replays
// recorded traffic (CSV, JSON Lines or an access log, plain or gzip) in
// virtual time against every algorithm at once, one limiter key per client
// key, on pipelined scripts, with per-key figures (Config, Validate, Run).
package replay

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/targets"
)

// Config is what a traffic replay (`ratelab run --traffic`) compares.
type Config struct {
	// Algorithms are registry names; empty means all.
	Algorithms []string
	// Limit is every key's limit (required: a traffic file has no
	// defaults): Count >= 1, Window in 1ms..MaxRunWindow; Precision
	// reaches bucketed-hash only.
	Limit limit.Limit
	// Cost replaces every record's cost when non-zero (1..Limit.Count).
	Cost int64
	// Traffic says how to read the traffic (format, fields, time unit,
	// Strict); see scenarios.TrafficOptions.
	Traffic scenarios.TrafficOptions
	// Source names the traffic in the results and errors (a file path);
	// "" means "traffic".
	Source string
	// Name is the rows' scenario column; "" means "traffic".
	Name string
	// Size is the traffic's size in bytes as read (compressed for a gzip
	// file), for the progress display; zero means unknown.
	Size int64
	// Pipeline is how many decisions each algorithm sends per round trip
	// (EVALSHA calls in one pipeline, executed by Redis in order, so the
	// decisions are those of calls made one by one); zero means
	// DefaultPipeline.
	Pipeline int
	// Timeout bounds each decision: a pipeline's round trip is bounded by
	// Timeout times ceil(Pipeline/64) (a deep pipeline waits behind the
	// other algorithms' on a busy server); zero means no bound beyond the
	// client's. OnError is what a failed call counts as (""
	// means fail-closed); MaxOutage stops the replay when round trips keep
	// failing that long (zero: never).
	Timeout   time.Duration
	OnError   harness.ErrorPolicy
	MaxOutage time.Duration
	// AdaptTimeout makes Timeout's bound a floor: a round trip may take
	// up to callguard.DefaultFloor and callguard.DefaultFactor times the
	// typical round trip seen (a slow machine is waited for). A round trip
	// past the bound stops the replay with a *callguard.StallError either
	// way: the replay runs in virtual time, where a slow call changes no
	// decision. Each algorithm's calls have a call guard of their own
	// (harness/callguard).
	AdaptTimeout bool
	// RunID names the keys' prefix "ratelab:<RunID>:"; empty picks a fresh one.
	RunID string
}

// DefaultPipeline is the pipeline depth of a replay.
const DefaultPipeline = 256

// MaxPipeline is the deepest pipeline a replay takes.
const MaxPipeline = 10_000

// Validate checks cfg and returns an error naming the field: algorithms
// registered; Limit valid (limit.Limit.Validate: "limit", "window",
// "precision") with Window <= harness.MaxRunWindow; Cost 0 or 1..Limit.Count;
// Pipeline 0..MaxPipeline; OnError fail-closed or fail-open ("" is
// fail-closed); Timeout and MaxOutage >= 0; the traffic format and time
// unit known ("" is auto).
func (cfg Config) Validate() error {
	if err := targets.CheckAlgorithms(cfg.Algorithms); err != nil {
		return &field.Error{Name: "algorithms", Err: err}
	}
	formats := []scenarios.TrafficFormat{"", scenarios.FormatAuto, scenarios.FormatCSV, scenarios.FormatJSONL, scenarios.FormatAccessLog}
	units := []scenarios.TimeUnit{"", scenarios.UnitAuto, scenarios.UnitRFC3339, scenarios.UnitSeconds, scenarios.UnitMillis, scenarios.UnitMicros, scenarios.UnitNanos}
	if err := cfg.Limit.Validate(); err != nil {
		return err
	}
	switch {
	case cfg.Limit.Window > harness.MaxRunWindow:
		return field.Errorf("window", "at most %s (ten years), got %s", limit.FormatWindow(harness.MaxRunWindow), limit.FormatWindow(cfg.Limit.Window))
	case cfg.Cost < 0 || cfg.Cost > cfg.Limit.Count:
		return field.Errorf("cost", "must be in 1..%d (the limit), got %d", cfg.Limit.Count, cfg.Cost)
	case cfg.Pipeline < 0 || cfg.Pipeline > MaxPipeline:
		return field.Errorf("pipeline", "must be in 1..%d, got %d", MaxPipeline, cfg.Pipeline)
	case cfg.Timeout < 0:
		return field.Errorf("timeout", "must be > 0, got %s", cfg.Timeout)
	case cfg.MaxOutage < 0:
		return field.Errorf("max-outage", "must be >= 0, got %s", cfg.MaxOutage)
	case cfg.OnError != "" && cfg.OnError != harness.FailClosed && cfg.OnError != harness.FailOpen:
		return field.Errorf("on-error", "unknown policy %q (want fail-closed or fail-open)", cfg.OnError)
	case !slices.Contains(formats, cfg.Traffic.Format):
		return field.Errorf("traffic-format", "unknown format %q (want auto, csv, jsonl or access-log)", cfg.Traffic.Format)
	case !slices.Contains(units, cfg.Traffic.TimeUnit):
		return field.Errorf("time-unit", "unknown unit %q (want auto, rfc3339, s, ms, us or ns)", cfg.Traffic.TimeUnit)
	}
	return nil
}

// WithDefaults returns cfg with its zero fields set to their defaults:
// all algorithms, OnError fail-closed, Pipeline DefaultPipeline, Source
// and Name "traffic". Run calls it.
func (cfg Config) WithDefaults() Config {
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = algorithms.Names()
	}
	if cfg.OnError == "" {
		cfg.OnError = harness.FailClosed
	}
	if cfg.Pipeline == 0 {
		cfg.Pipeline = DefaultPipeline
	}
	if cfg.Source == "" {
		cfg.Source = "traffic"
	}
	if cfg.Name == "" {
		cfg.Name = "traffic"
	}
	return cfg
}

// Run replays traffic (a CSV, JSON Lines or access log, plain or gzip;
// see scenarios.TrafficReader) in virtual time against every algorithm of
// cfg, one limiter key per client key, and returns one Row per algorithm
// with per-key figures (Row.PerKey, Row.Trailing) and Results.Traffic.
//
// The traffic is read once, as a stream: records are sent in time order,
// Pipeline decisions per round trip, to all algorithms at once (each on its
// own keys "<prefix><algorithm>:{<key>}"), and each algorithm's decisions
// are aggregated per key as they come (measure.KeyTracker), so memory is
// one entry per key plus one window of decisions per key, whatever the
// traffic's length. Record times keep their offsets from the anchor (the
// first time aligned down to the window) and are replayed from the first
// window boundary after harness.VirtualEpoch. Algorithms that cannot take virtual
// time (gcra) are left out with a note.
//
// Memory: key expiries run on Redis's real clock, which the replay
// outpaces, so at each memory reading the keys the calls named whose TTL
// has run out in virtual time are removed (as live traffic would have seen
// them expire) and the others' MEMORY USAGE summed. Keys a script derives
// from the named one (fixed-window's and sliding-counter's per-window
// counters) are neither seen by the readings nor expired: the reading at
// the end counts them, and a note says it is an upper bound. The readings are taken after 1024,
// 2048, 4096, ... 65536 decisions, then every 65536, and once the traffic
// ends; the peak (PerKey.PeakMemoryBytes) is the largest of them and of
// the reading at the end (Row.MemoryBytes: a SCAN of the algorithm's
// prefix, as for scenario runs). Memory between readings is not seen.
//
// Every decision is streamed to log (nil discards them); progress (nil
// discards) gets a progress bar when it is a terminal, else a line every
// few seconds. Malformed lines are counted and skipped (the first few, with
// line numbers, in Results.Traffic.Examples and on progress), unless
// cfg.Traffic.Strict makes the first one stop the replay; a record whose
// cost exceeds the limit counts as malformed.
//
// Errors: cfg.Validate's; a traffic that is empty, unreadable or has no
// valid record is a *field.Error named "traffic", returned with nil Results
// and before anything is sent to Redis. Other errors (a strict malformed
// line, Redis failing longer than MaxOutage, ctx cancelled) return the
// Results measured so far, Complete false. The run's keys are removed at
// the end, also when ctx is cancelled.
func Run(ctx context.Context, rd *server.Redis, traffic io.Reader, cfg Config, log *measure.DecisionLog, progress io.Writer) (*measure.Results, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	counted := &countingReader{r: traffic}
	src, err := openTraffic(counted, cfg)
	if err != nil {
		return nil, err
	}
	s := harness.NewSession(rd, cfg.RunID, cfg.Timeout)
	res := &measure.Results{
		Header: s.Header("run", measure.Repro{Limits: []limit.Limit{cfg.Limit}}),
		Config: measure.RunConfig{
			Algorithms: cfg.Algorithms, Scenarios: []string{cfg.Name},
			Limit: cfg.Limit.Count, WindowMS: cfg.Limit.Window.Milliseconds(),
			Clock: string(harness.VirtualClock), Prefix: s.Prefix,
			TimeoutMS: cfg.Timeout.Milliseconds(), OnError: string(cfg.OnError),
		},
		Results: []measure.Row{},
	}
	defer s.RemoveKeysOrSay(ctx, progress)
	if err := s.Start(ctx); err != nil { // clean skips the live replay
		return nil, fmt.Errorf("register the run: %w", err)
	}
	gctx, guard, err := s.Guard(ctx, cfg.estimateBytes(len(cfg.Algorithms)), progress)
	if err != nil {
		return nil, err
	}
	lim := cfg.Limit
	var workers []*replayWorker
	for _, name := range cfg.Algorithms {
		l, err := targets.NewAlgorithm(name, rd.Client, lim)
		if err != nil {
			return nil, err
		}
		sl, scripted := l.(algorithms.Scripted)
		if !l.Capabilities().InjectsTime || !scripted {
			note := fmt.Sprintf("%s was not run on %s: it decides on its own clock, not an injected one, so virtual time cannot reach it (pass the time with an {now_*} argument, or use --clock redis)", name, cfg.Name)
			if !scripted {
				note = fmt.Sprintf("%s was not run on %s: it cannot be pipelined (not a script)", name, cfg.Name)
			}
			res.Notes = append(res.Notes, note)
			harness.Say(progress, "%s\n", note)
			continue
		}
		workers = append(workers, newReplayWorker(sl, lim, s.Prefix+name+":", cfg))
	}
	var replayed, redisCPU float64
	var redisCores int
	err = func() error {
		if err := algorithms.LoadScripts(ctx, rd.Client); err != nil {
			return err
		}
		harness.Say(progress, "%s: replaying %s (%s) against %d algorithms, limit %s per key, pipeline %d, virtual clock\n",
			cfg.Name, cfg.Source, src.stats().Format, len(workers), lim, cfg.Pipeline)
		cpu0, cores, cpuErr := server.CPU(ctx, rd.Client)
		start := time.Now()
		err := runReplay(gctx, rd, src, workers, cfg, log, progress, counted)
		replayed = time.Since(start).Seconds()
		if cpuErr == nil && !harness.Unanswered(err) { // INFO refused (an ACL): no ceiling figure
			if cpu1, _, cerr := server.CPU(ctx, rd.Client); cerr == nil {
				redisCPU, redisCores = cpu1-cpu0, cores
			}
		}
		return err
	}()
	err = harness.GuardErr(guard, err)
	info := src.info(cfg)
	for _, w := range workers {
		row := w.row(cfg, src.base)
		// keys derived by the scripts may linger in the thousands (see below)
		mctx, cancel := server.CleanupContext(ctx, max(s.CleanupTimeout(), 30*time.Second))
		if !harness.Unanswered(err) {
			keys, kerr := server.ScanKeys(mctx, rd.Client, w.prefix)
			if kerr == nil {
				row.Keys = int64(len(keys))
				row.MemoryBytes, kerr = server.MemoryUsage(mctx, rd.Client, keys)
			}
			if kerr == nil {
				if row.MemoryBytes > row.PerKey.PeakMemoryBytes {
					row.PerKey.PeakMemoryBytes = row.MemoryBytes
					row.PerKey.PeakMemoryAtMS = float64(w.lastAt.Microseconds()) / 1000
				}
			} else if err == nil {
				err = fmt.Errorf("memory of %s: %w", w.name, kerr)
			}
		}
		cancel()
		info.Decisions += w.decisions.Load()
		res.Results = append(res.Results, row)
	}
	if err == nil {
		// failed calls were counted as OnError says: not the limiter's figures
		f := &harness.CallsFailedError{}
		for _, w := range workers {
			f.Failed += w.errs
			f.Calls += w.requests
			if f.First == nil {
				f.First = w.firstErr
			}
		}
		if f.Failed > 0 {
			err = f
		}
	}
	var lingering []string
	for _, row := range res.Results {
		if row.PerKey != nil && row.Keys > row.PerKey.Keys {
			lingering = append(lingering, row.Algorithm)
		}
	}
	if len(lingering) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("memory of %s: counts keys of windows long past in virtual time (their scripts derive them, so the replay cannot expire them; their TTLs run on Redis's real clock): an upper bound on what live traffic would hold",
			strings.Join(lingering, ", ")))
	}
	if wall := time.Since(s.Started).Seconds(); wall > 0 {
		info.DecisionsPerSec = float64(info.Decisions) / wall
	}
	info.ReplayS, info.RedisCPUS, info.RedisCores = replayed, redisCPU, redisCores
	info.PeakRSSBytes = peakRSS()
	res.Traffic = info
	for _, ex := range info.Examples {
		harness.Say(progress, "%s: line %d: %s (skipped)\n", cfg.Source, ex.Line, ex.Reason)
	}
	if info.Malformed > int64(len(info.Examples)) {
		harness.Say(progress, "%s: %d malformed lines in all (skipped)\n", cfg.Source, info.Malformed)
	}
	err = s.Explain(ctx, err)
	res.DurationMS, res.Complete, res.Error = s.End(err)
	return res, err
}

// runReplay feeds the traffic to every worker in batches and waits for them.
func runReplay(ctx context.Context, rd *server.Redis, src *trafficSource, workers []*replayWorker,
	cfg Config, log *measure.DecisionLog, progress io.Writer, counted *countingReader) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	outer := ctx
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.run(ctx, rd, src.base, log); err != nil {
				cancel(fmt.Errorf("%s: %w", w.name, err))
			}
		}()
	}
	stop := startProgress(progress, cfg.Size, counted, src, workers)
	feedErr := src.feed(ctx, cfg.Pipeline, func(b []replayItem) bool {
		for _, w := range workers {
			select {
			case w.in <- b:
			case <-ctx.Done():
				return false
			}
		}
		return true
	})
	for _, w := range workers {
		close(w.in)
	}
	wg.Wait()
	stop()
	if log != nil {
		if err := log.Flush(); err != nil && feedErr == nil {
			feedErr = fmt.Errorf("decisions log: %w", err)
		}
	}
	if feedErr != nil {
		return feedErr
	}
	if ctx.Err() != nil {
		return context.Cause(outer)
	}
	return nil
}

// replayItem is one record to decide: its index in the replay and arrival.
type replayItem struct {
	seq int
	a   scenarios.Arrival
}

// countingReader counts the bytes read through it (for progress).
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// peakRSS is the process's peak resident set size in bytes (0 if unknown).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // Linux reports KiB
}

// sortExamples orders malformed-line examples by line and keeps n.
func sortExamples(ex []measure.LineExample, n int) []measure.LineExample {
	sort.SliceStable(ex, func(a, b int) bool { return ex[a].Line < ex[b].Line })
	if len(ex) > n {
		ex = ex[:n]
	}
	return ex
}

// minTrafficLine is the fewest bytes a traffic record takes ("0,k\n" is
// 4; real timestamps take 10 or more): replayEstimate counts Size/8 lines.
const minTrafficLine = 8

// estimateBytes is the upper bound of bytes a replay writes for n
// algorithms: every line a key of its own filled with cfg.Cost units, or
// with Limit units when the records carry their own costs (a key holds at
// most Limit accepted units per window), with lines bounded by
// Size/minTrafficLine; -1 (unknown) when the size is unknown (standard
// input) or compressed (.gz).
func (cfg Config) estimateBytes(n int) int64 {
	if cfg.Size <= 0 || strings.HasSuffix(cfg.Source, ".gz") {
		return -1
	}
	units := cfg.Limit.Count
	if cfg.Cost > 0 {
		units = cfg.Cost
	}
	lines := cfg.Size/minTrafficLine + 1
	if units > 0 && lines > math.MaxInt64/harness.BytesPerUnit/int64(max(n, 1))/units {
		return math.MaxInt64
	}
	return lines * units * harness.BytesPerUnit * int64(n)
}
