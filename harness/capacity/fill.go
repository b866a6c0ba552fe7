package capacity

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	prog "github.com/ratelab/ratelab/internal/progress"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/ratelab/ratelab/targets"
)

// A fill is fillWorkers goroutines, each sending pipelines of fillPipeline
// EVALSHA.
const (
	fillWorkers  = 2
	fillPipeline = 256
)

// flushWarning is recorded when a fill met NOSCRIPT: the scripts were
// flushed (and loaded again), which moves used_memory by the script cache.
const flushWarning = "the scripts were flushed during a fill (NOSCRIPT): ratelab loaded them again and retried those calls; the script cache moved used_memory by a few KB, so deltas over few keys may be off"

// fillKeys fills n keys "<prefix>{%06d}" of algorithm alg at limit l with
// plan, its offsets counted from the driver's anchor (the window boundary
// at or after harness.VirtualEpoch), and returns the keys. fillWorkers
// goroutines each drive their share of the keys (harness.Runner.Drive:
// pipelines of fillPipeline EVALSHA described by the algorithm's own Call,
// its exact keys and arguments, and read by its Decode). Every decision
// must be accepted. The calls have no bound but the client's: a failed
// call fails the cell, which is measured again; a connection the server
// closed is returned as such (server.IsClosed), since some calls may have
// run without a reply. Calls that met NOSCRIPT (a SCRIPT FLUSH) were
// loaded and resent by the driver and are noted (flushWarning): a call
// that missed the script may then run after later calls of its key that
// found it, and all calls of a fill are accepted within one window, so
// the key ends the same. Each decision adds 1 to count (nil: none).
func (m *meter) fillKeys(ctx context.Context, alg string, l limit.Limit, plan []FillCall, prefix string, n int, count *prog.Meter) ([]string, error) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s{%06d}", prefix, i)
	}
	var wg sync.WaitGroup
	var reloads atomic.Int64
	errs := make([]error, fillWorkers)
	for w := range fillWorkers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// a limiter per worker, as each client of a real deployment has
			// one: sliding-log's member names come from its own counter
			lim, err := scripted(alg, m.targets, m.c, l)
			if err != nil {
				errs[w] = err
				return
			}
			r := &harness.Runner{Redis: m.c, Clock: harness.VirtualClock, Pipeline: fillPipeline}
			share := func(yield func(scenarios.Arrival) bool) {
				for i := w; i < n; i += fillWorkers {
					key := fmt.Sprintf("%06d", i) // once per key: a plan may hold a call per unit of the limit
					for _, fc := range plan {
						if !yield(scenarios.Arrival{At: fc.Offset, Key: key, Cost: fc.Cost}) {
							return
						}
					}
				}
			}
			job := harness.Job{Limiter: lim, Limit: l, Scenario: "fill", Prefix: prefix, Arrivals: share}
			job.Sink = harness.SinkFunc(func(o harness.Outcome) error {
				switch {
				case o.Err != nil:
					return o.Err
				case !o.Decision.Allowed:
					return fmt.Errorf("a fill decision was denied (%s, key %s%s, cost %d at +%s): the fill plan overran the limit",
						lim.Name(), prefix, "{"+o.Arrival.Key+"}", o.Arrival.Cost, o.Arrival.At)
				}
				count.Add(1)
				return nil
			})
			_, errs[w] = r.Drive(ctx, job)
			reloads.Add(r.Reloads())
		}(w)
	}
	wg.Wait()
	if reloads.Load() > 0 && !slices.Contains(m.warnings, flushWarning) {
		m.warnings = append(m.warnings, flushWarning)
	}
	for _, err := range errs {
		if err != nil {
			return nil, err // the workers fail alike on one fault (READONLY, OOM): the first is said once
		}
	}
	return keys, nil
}

// scripted returns the limiter of alg (a built-in or one of ts) at l,
// as the algorithms.Scripted every built-in algorithm and script is.
func scripted(alg string, ts []targets.Target, c redis.UniversalClient, l limit.Limit) (algorithms.Scripted, error) {
	lim, err := targets.NewLimiter(alg, ts, c, l)
	if err != nil {
		return nil, err
	}
	s, ok := lim.(algorithms.Scripted)
	if !ok {
		return nil, fmt.Errorf("%s: not a script limiter, cannot be pipelined", alg)
	}
	return s, nil
}
