package main

import (
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

type benchFlags struct {
	redis      redisFlags
	algorithms []string
	paths      []string
	limit      int64
	window     time.Duration
	clients    int
	pipeline   int
	duration   time.Duration
	requests   int64
	keys       int
	rate       float64
	compare    bool
	rbBinary   string
	rounds     int
	procs      int
	out        string
	format     string
	cpuprofile string
}

func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &benchFlags{}
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure decisions per second and latency of each algorithm, next to redis-benchmark",
		Long: `bench sends decisions as fast as Redis answers (or at --rate) from --clients
connections, each sending pipelines of --pipeline EVALSHA calls, and reports
decisions per second and latency p50/p99/p99.9/max per algorithm, on two
paths: allow (each decision picks one of --keys keys at random, so nearly all
are accepted) and deny (one hot key held at its limit, so nearly all are
denied). Scripts read Redis TIME, as in production.

Latency is the round trip of a decision's pipeline (HdrHistogram, one per
client, merged). With --rate, each client paces its pipelines and latencies
are corrected for coordinated omission. Next to the client's latency, the
server's own time per EVALSHA (INFO commandstats) and redis-server's CPU show
where the time goes.

--compare-redis-benchmark also runs Debian's redis-benchmark with the very
EVALSHA call ratelab makes (captured from each algorithm's Allow), the same
clients, pipeline and key space, in runs alternating with ratelab's (A B,
B A, ...), each from fresh keys and making the same number of decisions: the
first ratelab run lasts --duration and sets that number (a short warm-up run
before it is not counted). The table shows the medians and their ratio
ratelab/redis-benchmark. Comparisons default to 9 rounds of 1 s runs: many
short alternating runs ride out bursts of other load better than a few long
ones; on a busy machine, more --rounds steady the medians further.
--cpuprofile writes ratelab's CPU profile, to see where the client's time goes.

Keys are under the run's prefix and removed after each run.`,
		Example: `  ratelab bench
  ratelab bench --algorithms sliding-log --compare-redis-benchmark
  ratelab bench --algorithms sliding-log --clients 50 --pipeline 16 --compare-redis-benchmark --rounds 15
  ratelab bench --rate 20000 --duration 10s --format json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runBench(c, f, stdout, stderr) },
	}
	fl := c.Flags()
	f.redis.add(c)
	fl.StringSliceVar(&f.algorithms, "algorithms", nil, "algorithms to measure, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.StringSliceVar(&f.paths, "paths", measure.BenchPaths, "paths to measure: allow (many keys), deny (one hot key)")
	fl.Int64Var(&f.limit, "limit", harness.DefaultBenchLimit.Limit, "cost units per window of every decision's limit")
	fl.DurationVar(&f.window, "window", harness.DefaultBenchLimit.Window, "window of the limit")
	fl.IntVar(&f.clients, "clients", harness.DefaultBenchClients, "connections, each sending pipelines and waiting for their replies")
	fl.IntVar(&f.pipeline, "pipeline", harness.DefaultBenchPipeline, "decisions (EVALSHA) per pipeline")
	fl.DurationVar(&f.duration, "duration", 0, "length of the first run of each algorithm and path; later runs make as many decisions (default 3s, or 1s when comparing)")
	fl.Int64Var(&f.requests, "requests", 0, "decisions per run instead of --duration")
	fl.IntVar(&f.keys, "keys", harness.DefaultBenchKeys, "the allow path's key space (redis-benchmark -r)")
	fl.Float64Var(&f.rate, "rate", 0, "target decisions per second of all clients (0: as fast as replies come); latencies corrected for coordinated omission")
	fl.BoolVar(&f.compare, "compare-redis-benchmark", false, "also run redis-benchmark with the same EVALSHA, clients and pipeline, and print the ratio")
	fl.StringVar(&f.rbBinary, "redis-benchmark", "redis-benchmark", "the redis-benchmark binary")
	fl.IntVar(&f.rounds, "rounds", 0, "runs of each tool per algorithm and path; figures are medians (default 1, or 9 when comparing)")
	fl.IntVar(&f.procs, "procs", 1, "GOMAXPROCS while measuring (0: leave as is); 1 leaves a core to a local redis-server")
	fl.StringVar(&f.out, "out", "", "directory for results.json, report.md and plots (default results/<run id>)")
	fl.StringVar(&f.format, "format", "table", "what to print on stdout: "+strings.Join(reports.Formats, ", "))
	fl.StringVar(&f.cpuprofile, "cpuprofile", "", "write ratelab's CPU profile of the whole bench to this file (go tool pprof)")
	return c
}

// config checks the flags and turns them into a harness.BenchConfig.
func (f *benchFlags) config(c *cobra.Command) (harness.BenchConfig, error) {
	cfg := harness.BenchConfig{
		Algorithms: f.algorithms, Paths: f.paths,
		Limit:   algorithms.Limit{Limit: f.limit, Window: f.window},
		Clients: f.clients, Pipeline: f.pipeline, Duration: f.duration, Requests: f.requests,
		Keys: f.keys, Rate: f.rate, CompareRedisBenchmark: f.compare, RedisBenchmark: f.rbBinary,
		Rounds: f.rounds, Procs: f.procs,
	}
	if !slices.Contains(reports.Formats, f.format) {
		return cfg, usagef("--format: unknown format %q (want %s)", f.format, strings.Join(reports.Formats, ", "))
	}
	for _, a := range f.algorithms {
		if !slices.Contains(algorithms.Names(), a) {
			return cfg, usagef("--algorithms: unknown algorithm %q (known: %s)", a, strings.Join(algorithms.Names(), ", "))
		}
	}
	if len(f.paths) == 0 {
		return cfg, usagef("--paths: give allow, deny or both")
	}
	for _, p := range f.paths {
		if !slices.Contains(measure.BenchPaths, p) {
			return cfg, usagef("--paths: unknown path %q (want allow, deny)", p)
		}
	}
	switch {
	case f.limit < 1:
		return cfg, usagef("--limit: must be >= 1, got %d", f.limit)
	case f.window < time.Millisecond:
		return cfg, usagef("--window: must be >= 1ms, got %s", f.window)
	case f.clients < 1 || f.clients > 1000:
		return cfg, usagef("--clients: must be in 1..1000, got %d", f.clients)
	case f.pipeline < 1:
		return cfg, usagef("--pipeline: must be >= 1, got %d", f.pipeline)
	case c.Flags().Changed("duration") && f.duration <= 0:
		return cfg, usagef("--duration: must be > 0, got %s", f.duration)
	case f.requests < 0:
		return cfg, usagef("--requests: must be >= 0, got %d", f.requests)
	case f.keys < 1:
		return cfg, usagef("--keys: must be >= 1, got %d", f.keys)
	case f.rate < 0:
		return cfg, usagef("--rate: must be >= 0, got %g", f.rate)
	case f.rounds < 0:
		return cfg, usagef("--rounds: must be >= 0, got %d", f.rounds)
	case f.procs < 0:
		return cfg, usagef("--procs: must be >= 0, got %d", f.procs)
	case f.rate > 0 && f.compare:
		return cfg, usagef("--rate: redis-benchmark cannot pace its requests; compare without --rate")
	}
	if f.compare {
		if _, err := exec.LookPath(f.rbBinary); err != nil {
			return cfg, usagef("--compare-redis-benchmark: %s not found (Debian: apt-get install redis-tools)", f.rbBinary)
		}
		if strings.HasPrefix(f.redis.spec, "redis://") || strings.HasPrefix(f.redis.spec, "rediss://") {
			cfg.RedisURL = f.redis.spec
		}
	}
	return cfg, nil
}

func runBench(c *cobra.Command, f *benchFlags, stdout, stderr io.Writer) error {
	cfg, err := f.config(c)
	if err != nil {
		return err
	}
	cfg.RunID = engine.NewRunID()
	rd, out, err := openOut(c, &f.redis, f.out, cfg.RunID, false, stderr)
	if err != nil {
		return err
	}
	defer rd.Close()
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return usagef("--cpuprofile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return usagef("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, runErr := harness.RunBench(c.Context(), rd, cfg, stderr)
	return publish(stdout, stderr, "bench", out, res.DurationMS, runErr,
		func(dir string) error { return reports.WriteBenchDir(dir, res) },
		func(w io.Writer) error { return reports.WriteBench(w, f.format, res) })
}
