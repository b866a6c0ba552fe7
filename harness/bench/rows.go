package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// bencher runs the measurements of one bench.
type bencher struct {
	cfg      Config // with defaults
	sess     *harness.Session
	nodes    []*redis.Client       // stats: the server, or each master of a cluster
	user     *server.TempUser      // redis-benchmark's login on a server that wants one, else nil
	client   redis.UniversalClient // the workers' connections (a ClusterClient on a cluster)
	progress io.Writer
	seq      int // runs so far: each run's keys are under "<prefix>b<seq>:"
}

// runPrefix is the key prefix of the next run.
func (b *bencher) runPrefix() string {
	b.seq++
	return fmt.Sprintf("%sb%d:", b.sess.Prefix, b.seq)
}

// measure runs one algorithm x path: a short warm-up run of ratelab (not
// counted; on the deny path it must see the hot key denied), then Rounds
// runs of ratelab, alternating with redis-benchmark's when comparing.
func (b *bencher) measure(ctx context.Context, alg, path string) (measure.BenchRow, error) {
	cfg := b.cfg
	l := cfg.Limit
	lim, err := targets.NewLimiter(alg, cfg.Targets, b.sess.Redis.Client, l)
	if err != nil {
		return measure.BenchRow{}, err
	}
	call, err := CallOf(lim)
	if err != nil {
		return measure.BenchRow{}, err
	}
	row := measure.BenchRow{
		Algorithm: alg, Path: path, Clients: cfg.Clients, Pipeline: cfg.Pipeline, Keys: cfg.Keys,
		Limit: l.Count, WindowMS: l.Window.Milliseconds(), LimitDesc: lim.Describe(),
		RatePerS: cfg.Rate, Corrected: cfg.Rate > 0, Runs: []measure.BenchRun{},
	}
	if path == measure.PathDeny {
		row.Keys = 1
	}
	// warm-up, not counted: connections, the Go runtime and the server's
	// script cache settle before the first measured run
	warmPrefix := b.runPrefix()
	warm := *b
	warm.cfg.Duration = min(cfg.Duration/4, time.Second)
	out, err := warm.runRatelab(ctx, call, path, warmPrefix, 0)
	if err != nil {
		return row, fmt.Errorf("warm-up: %w", err)
	}
	// a deny path's hot key that has not yet allowed its limit was warmed
	// too briefly to tell (a loaded machine): warm it on, each time twice
	// as long, until the warm-ups have run a second or more in all (under
	// two: MaxDenyLimit's budget)
	allowed, took := out.allowed, warm.cfg.Duration
	for path == measure.PathDeny && out.denied == 0 && allowed <= l.Count && took < time.Second {
		warm.cfg.Duration *= 2
		if out, err = warm.runRatelab(ctx, call, path, warmPrefix, 0); err != nil {
			return row, fmt.Errorf("warm-up: %w", err)
		}
		allowed, took = allowed+out.allowed, took+warm.cfg.Duration
	}
	if path == measure.PathDeny && out.denied == 0 {
		return row, neverDenied(alg, l, "warm-up", allowed)
	}
	if err := b.sess.RemoveKeys(ctx, warmPrefix); err != nil {
		return row, err
	}
	n := cfg.Requests
	hist := newHist()
	var rl, rb []measure.BenchRun
	var rlStats, rbStats statsSum
	for round := 0; round < cfg.Rounds; round++ {
		tools := []string{"ratelab"}
		if cfg.CompareRedisBenchmark {
			tools = []string{"ratelab", "redis-benchmark"}
			if round%2 == 1 {
				tools = []string{"redis-benchmark", "ratelab"}
			}
		}
		for _, tool := range tools {
			runPrefix := b.runPrefix()
			// the script is loaded before every run: redis-benchmark cannot
			// load it again after a SCRIPT FLUSH (ratelab's workers can)
			if err := call.Script.Load(ctx, b.sess.Redis.Client).Err(); err != nil {
				return row, fmt.Errorf("SCRIPT LOAD: %w", err)
			}
			before, err := b.stats(ctx)
			if err != nil {
				return row, err
			}
			var run measure.BenchRun
			if tool == "ratelab" {
				out, err := b.runRatelab(ctx, call, path, runPrefix, n)
				if err != nil {
					return row, err
				}
				run = out.run
				hist.Merge(out.hist)
				row.Decisions += out.run.Decisions
				row.Allowed += out.allowed
				row.Denied += out.denied
				row.Errors += out.errors
				if n == 0 {
					n = out.run.Decisions // later runs make as many decisions
				}
			} else {
				if run, err = b.runRedisBenchmark(ctx, call, path, runPrefix, n); err != nil {
					return row, err
				}
			}
			after, err := b.stats(ctx)
			if err != nil {
				return row, err
			}
			d := after.minus(before)
			if tool == "redis-benchmark" && (d.failed > 0 || d.calls < run.Decisions) {
				return row, fmt.Errorf("redis-benchmark: %d of its EVALSHA calls failed or did not run (server saw %d of %d)",
					d.failed, d.calls, run.Decisions)
			}
			run.ServerUSPerCall = usPerCall(d.cpu, d.calls)
			if run.Seconds > 0 {
				run.ServerCPUPct = 100 * d.cpu / run.Seconds
			}
			acc := &rlStats
			if tool == "ratelab" {
				rl = append(rl, run)
			} else {
				rb = append(rb, run)
				acc = &rbStats
			}
			acc.add(d, run)
			row.Runs = append(row.Runs, run)
			if b.progress != nil {
				fmt.Fprintf(b.progress, "bench: %s %s %s: %d decisions, %.0f/s, server %.1f µs/call, server CPU %.0f%%, client CPU %.0f%%\n",
					alg, path, tool, run.Decisions, run.PerS, run.ServerUSPerCall, run.ServerCPUPct, run.ClientCPUPct)
			}
			if err := b.sess.RemoveKeys(ctx, runPrefix); err != nil {
				return row, err
			}
		}
	}
	if path == measure.PathDeny && row.Denied == 0 {
		return row, neverDenied(alg, l, "measured runs", row.Allowed)
	}
	row.DecisionsPerS = medianPerS(rl)
	row.ServerUSPerCall, row.ServerCPUPct, row.ClientCPUPct = rlStats.perCall(), rlStats.cpuPct(), rlStats.clientPct()
	if len(rb) > 0 {
		row.RedisBenchmarkPerS = medianPerS(rb)
		row.RedisBenchmarkServerUSPerCall, row.RedisBenchmarkServerCPUPct = rbStats.perCall(), rbStats.cpuPct()
		row.RedisBenchmarkClientCPUPct = rbStats.clientPct()
		if row.RedisBenchmarkPerS > 0 {
			row.VsRedisBenchmark = row.DecisionsPerS / row.RedisBenchmarkPerS
		}
	}
	if hist.TotalCount() > 0 {
		row.P50US = hist.ValueAtQuantile(50)
		row.P99US = hist.ValueAtQuantile(99)
		row.P999US = hist.ValueAtQuantile(99.9)
		row.MaxUS = hist.Max()
		for _, q := range cdfQuantiles {
			row.CDF = append(row.CDF, measure.CDFPoint{Quantile: q / 100, US: hist.ValueAtQuantile(q)})
		}
	}
	return row, nil
}

// neverDenied is the error of a deny path whose hot key was never denied:
// the limit is more than the runs can reach, so the path would measure
// accepted decisions under the name "deny".
func neverDenied(alg string, l limit.Limit, when string, allowed int64) error {
	return field.Errorf("limit", "%s deny path: the hot key was never denied in the %s (%d decisions, all allowed): "+
		"%d per %s is more than the bench reaches on one key; lower the limit, or bench only the allow path",
		alg, when, allowed, l.Count, l.Window)
}
