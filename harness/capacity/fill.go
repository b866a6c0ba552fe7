package capacity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/callguard"
	"github.com/ratelab/ratelab/limit"
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
// plan, from the virtual instant start, with fillWorkers pipelines of
// EVALSHA described by the algorithm's own Call (its exact keys and
// arguments) and read by its Decode. Every decision must be accepted. It
// returns the keys.
func (m *meter) fillKeys(ctx context.Context, alg string, l limit.Limit, plan []FillCall, prefix string, n int, start time.Time) ([]string, error) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s{%06d}", prefix, i)
	}
	var wg sync.WaitGroup
	// the fill's calls have no bound but the client's (a failed call
	// fails the cell, measured again): the guard counts NOSCRIPT reloads
	guard := callguard.New(callguard.Config{})
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
			b := newBatch(m.c, lim, guard)
			for i := w; i < n && errs[w] == nil; i += fillWorkers {
				for _, fc := range plan {
					call, err := lim.Call(keys[i], fc.Cost, algorithms.At(start.Add(fc.Offset)))
					if err != nil {
						errs[w] = err
						break
					}
					if b.calls = append(b.calls, call); len(b.calls) >= fillPipeline {
						if errs[w] = b.run(ctx); errs[w] != nil {
							break
						}
					}
				}
			}
			if errs[w] == nil {
				errs[w] = b.run(ctx)
			}
		}(w)
	}
	wg.Wait()
	if guard.Reloads() > 0 && !slices.Contains(m.warnings, flushWarning) {
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

// batch is the calls of one worker waiting for their pipeline. Not safe
// for concurrent use.
type batch struct {
	pipe  *algorithms.ScriptPipe
	lim   algorithms.Scripted
	calls []algorithms.ScriptCall
	guard *callguard.Guard // the fill's: counts the NOSCRIPT reloads
}

// newBatch returns the batch of one worker sending to c.
func newBatch(c redis.UniversalClient, lim algorithms.Scripted, guard *callguard.Guard) *batch {
	return &batch{pipe: algorithms.NewScriptPipe(c), lim: lim, guard: guard}
}

// run sends the queued calls as one pipeline of EVALSHA and checks that
// every decision was accepted. Calls that found no script (NOSCRIPT, after
// a SCRIPT FLUSH) did not run: the ScriptPipe loads their scripts and
// resends them, in their order. Calls of one key are never reordered but
// for one case: a call that missed the script runs after later calls of its
// key that found it (another worker loaded it meanwhile); all calls of a
// fill are accepted within one window, so the key ends the same. A
// connection the server closed is returned (server.IsClosed): some calls
// may have run without a reply, so the cell is measured again
// (measureAll), never these calls resent.
func (b *batch) run(ctx context.Context) error {
	if len(b.calls) == 0 {
		return nil
	}
	calls := b.calls
	b.calls = b.calls[:0]
	trip := b.guard.Begin(ctx, len(calls))
	cmds, err := trip.Exec(b.pipe, calls)
	_ = trip.End(err) // no bound: no stall
	if err != nil {
		return fmt.Errorf("%s: %w", b.lim.Name(), err)
	}
	for i, cmd := range cmds {
		reply, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("%s: %w", b.lim.Name(), err)
		}
		d, err := b.lim.Decode(calls[i], reply)
		if err != nil {
			return fmt.Errorf("%s: %w", b.lim.Name(), err)
		}
		if !d.Allowed {
			return fmt.Errorf("a fill decision was denied (%s %v %v): the fill plan overran the limit", b.lim.Name(), calls[i].Keys, calls[i].Args)
		}
	}
	return nil
}
