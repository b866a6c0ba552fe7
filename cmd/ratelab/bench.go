package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/bench"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/publish"
)

// benchFlags are bench's flags: most go straight into the bench.Config.
type benchFlags struct {
	commonFlags
	target     targetFlags
	cfg        bench.Config
	cpuprofile string
}

func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &benchFlags{}
	c := command("bench", "Measure decisions per second and latency of each algorithm, next to redis-benchmark",
		func(c *cobra.Command) error { return runBench(c, f, stdout, stderr) })
	f.bind(c)
	return c
}

// bind declares bench's flags on c, stored in f.
func (f *benchFlags) bind(c *cobra.Command) {
	fl := c.Flags()
	f.addCommon(c, "directory for results.json, report.md and plots (default results/<run id>); it must be new or empty", "run")
	f.target.addMany(c)
	cfg := &f.cfg
	fl.StringSliceVar(&cfg.Algorithms, "algorithms", nil, "algorithms to measure, comma-separated (default all: "+strings.Join(algorithms.Names(), ",")+")")
	fl.StringSliceVar(&cfg.Paths, "paths", measure.BenchPaths, "paths to measure: allow (many keys), deny (one hot key)")
	countVar(fl, &cfg.Limit.Count, "limit", bench.DefaultLimit.Count, "cost units per window of every decision's limit")
	windowVar(fl, &cfg.Limit.Window, "window", bench.DefaultLimit.Window, "window of the limit")
	fl.IntVar(&cfg.Clients, "clients", bench.DefaultClients, "connections, each sending pipelines and waiting for their replies")
	fl.IntVar(&cfg.Pipeline, "pipeline", bench.DefaultPipeline, "decisions (EVALSHA) per pipeline")
	fl.DurationVar(&cfg.Duration, "duration", 0, "length of the first run of each algorithm and path; later runs make as many decisions (default 3s, or 1s when comparing)")
	fl.Int64Var(&cfg.Requests, "requests", 0, "decisions per run instead of --duration")
	fl.IntVar(&cfg.Keys, "keys", bench.DefaultKeys, "the allow path's key space (redis-benchmark -r)")
	fl.Float64Var(&cfg.Rate, "rate", 0, "target decisions per second of all clients (0: as fast as replies come); latencies corrected for coordinated omission")
	fl.BoolVar(&cfg.CompareRedisBenchmark, "compare-redis-benchmark", false, "also run redis-benchmark with the same EVALSHA, clients and pipeline, and print the ratio")
	fl.StringVar(&cfg.RedisBenchmark, "redis-benchmark", "redis-benchmark", "the redis-benchmark binary")
	fl.IntVar(&cfg.Rounds, "rounds", 0, "runs of each tool per algorithm and path; figures are medians (default 1, or 9 when comparing)")
	fl.IntVar(&cfg.Procs, "procs", 1, "GOMAXPROCS while measuring (0: leave as is); 1 leaves a core to a local redis-server")
	fl.StringVar(&f.cpuprofile, "cpuprofile", "", "write ratelab's CPU profile of the whole bench to this file (go tool pprof); an existing file is replaced only with --force")
}

// config checks the flags' bench.Config (a --duration given as 0 is
// refused: 0 in the Config means the default) and completes it.
func (f *benchFlags) config(c *cobra.Command) (bench.Config, error) {
	if err := f.target.load(c, nil); err != nil {
		return f.cfg, err
	}
	if err := f.target.atomicOnly(c, "bench", f.cfg.Algorithms); err != nil {
		return f.cfg, err
	}
	cfg := f.cfg
	cfg.Targets = f.target.targets()
	cfg.RedisURL = f.redis.spec
	if c.Flags().Changed("duration") && cfg.Duration <= 0 {
		return cfg, usagef("--duration: must be > 0, got %s", cfg.Duration)
	}
	cfg.RunID = server.NewRunID()
	return cfg, flagError(c.Flags(), cfg.Validate())
}

func runBench(c *cobra.Command, f *benchFlags, stdout, stderr io.Writer) error {
	cfg, err := f.config(c)
	if err != nil {
		return err
	}
	var pf *outdir.Output
	if f.cpuprofile != "" { // before anything is measured: an existing file is refused without --force
		if pf, err = outdir.Create(f.cpuprofile, f.out.force); err != nil {
			return usagef("--cpuprofile: %w", err)
		}
		// once Run has stopped the profile; a bench that stops before Run leaves the path as it was
		defer func() { pf.Finish(cfg.CPUProfile != nil, stderr, "--cpuprofile") }()
	}
	l, err := f.start(c, &f.target, cfg.RunID, false, stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	if pf != nil {
		cfg.CPUProfile = pf
	}
	res, runErr := bench.Run(c.Context(), l.Redis, cfg, stderr)
	if _, ok := field.Name(runErr); ok {
		runErr = flagError(c.Flags(), runErr) // a deny path that never denies: --limit
	}
	return publish.Publish(c.Context(), stdout, stderr, "bench", l.Dir, res, res.DurationMS, runErr, f.format.Renderer(res))
}
