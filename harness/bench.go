package harness

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/measure"
)

// Bench defaults.
const (
	DefaultBenchClients  = 50
	DefaultBenchPipeline = 1
	DefaultBenchDuration = 3 * time.Second
	DefaultBenchKeys     = 100_000
	// DefaultBenchRounds is the rounds of alternating ratelab and
	// redis-benchmark runs when comparing (one run of each per round).
	// Many short runs ride out bursts of other load on a shared machine
	// better than a few long ones.
	DefaultBenchRounds = 9
	// DefaultCompareDuration is the first run's length when comparing.
	DefaultCompareDuration = time.Second
)

// DefaultBenchLimit is the limit bench decides against: 100 per minute, so
// the allow path's keys never fill within a run and the deny path's hot key
// stays full.
var DefaultBenchLimit = algorithms.Limit{Limit: 100, Window: time.Minute}

// BenchConfig is what `ratelab bench` measures.
type BenchConfig struct {
	// Algorithms are registry names; empty means all. Paths are PathAllow
	// and/or PathDeny; empty means both.
	Algorithms []string
	Paths      []string
	// Limit is the limit every decision is made against; zero means DefaultBenchLimit.
	Limit algorithms.Limit
	// Clients is the number of connections, each with one worker sending
	// pipelines of Pipeline decisions (EVALSHA) and waiting for the replies.
	Clients  int
	Pipeline int
	// Duration bounds the first run of each algorithm x path; later runs
	// (and redis-benchmark's) make as many decisions as it did, from the
	// same starting state. Requests, when > 0, fixes that number instead.
	Duration time.Duration
	Requests int64
	// Keys is the allow path's key space: each decision picks one of Keys
	// keys uniformly at random (redis-benchmark -r Keys).
	Keys int
	// Rate is the target decisions per second of all clients together; 0
	// sends as fast as replies come back (closed loop). With a rate,
	// latencies are corrected for coordinated omission
	// (HdrHistogram RecordCorrectedValue at each client's interval).
	Rate float64
	// CompareRedisBenchmark also runs redis-benchmark with the same script,
	// EVALSHA arguments, clients and pipeline, alternating with ratelab's runs.
	CompareRedisBenchmark bool
	// RedisBenchmark is the redis-benchmark binary; "" means from PATH.
	RedisBenchmark string
	// RedisURL is how redis-benchmark reaches a Redis given by URL (-u);
	// empty uses -h/-p of the Redis address.
	RedisURL string
	// Rounds is how many runs of each tool per algorithm x path: 0 means 1,
	// or DefaultBenchRounds when comparing. Figures are medians.
	Rounds int
	// Procs is GOMAXPROCS while runs are measured (0 leaves it): with 2
	// cores, 1 leaves the other core to redis-server.
	Procs int
	// RunID names the key prefix "ratelab:<RunID>:"; empty picks a fresh one.
	RunID string
}

// cdfQuantiles are the quantiles (percent) a row's CDF is sampled at.
var cdfQuantiles = []float64{0, 1, 2, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90,
	92, 94, 95, 96, 97, 98, 98.5, 99, 99.3, 99.5, 99.7, 99.8, 99.9, 99.93, 99.95, 99.97, 99.98, 99.99, 99.995, 99.999, 100}

// RunBench measures decisions per second and latency of each algorithm on
// each path against rd, and with CompareRedisBenchmark runs redis-benchmark
// with the same EVALSHA call in alternating runs (A B, B A, A B, ...), each
// run from fresh keys and making the same number of decisions. Scripts read
// Redis TIME (no injected clock), as in production. Keys are under
// "ratelab:<run id>:" and removed after each run.
func RunBench(ctx context.Context, rd *engine.Redis, cfg BenchConfig, progress io.Writer) (*measure.BenchResults, error) {
	cfg = cfg.withDefaults()
	prefix := engine.KeyPrefix + cfg.RunID + ":"
	res := &measure.BenchResults{
		Tool: "ratelab", Command: "bench",
		Config: measure.BenchRunConfig{
			Algorithms: cfg.Algorithms, Paths: cfg.Paths, Limit: cfg.Limit.Limit, WindowMS: cfg.Limit.Window.Milliseconds(),
			Clients: cfg.Clients, Pipeline: cfg.Pipeline, DurationMS: cfg.Duration.Milliseconds(), Requests: cfg.Requests,
			Keys: cfg.Keys, RatePerS: cfg.Rate, Rounds: cfg.Rounds, Procs: cfg.Procs,
			CompareRedisBenchmark: cfg.CompareRedisBenchmark, Prefix: prefix,
		},
		Redis:     rd.Info,
		StartedAt: time.Now().UTC(),
		Results:   []measure.BenchRow{},
	}
	base := rd.Client
	nodes, _, err := engine.Nodes(ctx, base) // the server, or a cluster's masters: their stats are summed
	if err != nil {
		return res, err
	}
	if len(nodes) > 1 && cfg.CompareRedisBenchmark {
		return res, fmt.Errorf("redis-benchmark cannot compare on a Redis Cluster: its --cluster mode does not route EVALSHA by key (MOVED); bench the cluster without --compare-redis-benchmark")
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if keys, err := engine.ScanKeys(cctx, base, prefix); err == nil {
			_ = engine.DeleteKeys(cctx, base, keys)
		}
	}()
	err = func() error {
		if cfg.CompareRedisBenchmark {
			v, err := exec.Command(cfg.RedisBenchmark, "--version").CombinedOutput()
			if err != nil {
				return fmt.Errorf("redis-benchmark: %w (Debian: apt-get install redis-tools)", err)
			}
			res.Config.RedisBenchmark = strings.TrimSpace(string(v))
		}
		if err := LoadScripts(ctx, base); err != nil {
			return err
		}
		if cfg.Procs > 0 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cfg.Procs))
		}
		var client redis.UniversalClient
		if cc, ok := base.(*redis.ClusterClient); ok {
			// a Redis Cluster: each worker's pipelines are split by slot over the masters
			opt := *cc.Options()
			opt.Protocol = 2
			opt.PoolSize = cfg.Clients // per master
			opt.MinIdleConns = 0
			opt.ReadTimeout = 30 * time.Second
			opt.WriteTimeout = 30 * time.Second
			opt.MaxRetries = -1
			client = redis.NewClusterClient(&opt)
		} else {
			opt := *base.(*redis.Client).Options()
			opt.Protocol = 2           // no RESP3 push handling per reply
			opt.PoolSize = cfg.Clients // one connection per worker
			opt.MinIdleConns = 0
			opt.PipelinePoolSize = -1 // pipelines on those same connections
			opt.ReadTimeout = 30 * time.Second
			opt.WriteTimeout = 30 * time.Second
			opt.MaxRetries = -1
			client = redis.NewClient(&opt)
		}
		defer client.Close()
		b := &bencher{cfg: cfg, base: base, nodes: nodes, client: client, progress: progress}
		seq := 0
		for _, alg := range cfg.Algorithms {
			for _, path := range cfg.Paths {
				row, err := b.measure(ctx, alg, path, prefix, &seq)
				if err != nil {
					return fmt.Errorf("%s %s path: %w", alg, path, err)
				}
				res.Results = append(res.Results, row)
			}
		}
		return nil
	}()
	res.DurationMS = time.Since(res.StartedAt).Milliseconds()
	res.Complete = err == nil
	if err != nil {
		res.Error = err.Error()
	}
	return res, err
}

func (cfg BenchConfig) withDefaults() BenchConfig {
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = algorithms.Names()
	}
	if len(cfg.Paths) == 0 {
		cfg.Paths = measure.BenchPaths
	}
	if cfg.Limit.Limit == 0 {
		cfg.Limit = DefaultBenchLimit
	}
	if cfg.Clients <= 0 {
		cfg.Clients = DefaultBenchClients
	}
	if cfg.Pipeline <= 0 {
		cfg.Pipeline = DefaultBenchPipeline
	}
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultBenchDuration
		if cfg.CompareRedisBenchmark {
			cfg.Duration = DefaultCompareDuration
		}
	}
	if cfg.Keys <= 0 {
		cfg.Keys = DefaultBenchKeys
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 1
		if cfg.CompareRedisBenchmark {
			cfg.Rounds = DefaultBenchRounds
		}
	}
	if cfg.RedisBenchmark == "" {
		cfg.RedisBenchmark = "redis-benchmark"
	}
	if cfg.RunID == "" {
		cfg.RunID = engine.NewRunID()
	}
	return cfg
}

// BenchCall is the EVALSHA call an algorithm's Allow makes for one
// decision, captured from Allow itself, with the arguments that change
// from call to call (a per-request nonce) marked.
type BenchCall struct {
	SHA string
	// Args follow the key: ARGV as strings.
	Args []string
	// Nonce lists the indexes of Args that differ between two calls.
	Nonce []int
}

// CaptureCall runs alg's Allow (cost 1, Redis TIME) twice against a
// recording Scripter and returns the EVALSHA it makes. The key it passes
// must come back unchanged as the only KEYS entry (hash-tagged keys do).
func CaptureCall(alg string, l algorithms.Limit) (BenchCall, error) {
	const probe = "{probe}"
	rec := &recordingScripter{}
	lim, err := algorithms.New(alg, rec, l)
	if err != nil {
		return BenchCall{}, err
	}
	for range 2 {
		if _, err := lim.Allow(context.Background(), probe, 1, algorithms.ServerTime()); err != nil {
			return BenchCall{}, err
		}
	}
	if len(rec.calls) != 2 {
		return BenchCall{}, fmt.Errorf("%s: Allow made %d script calls, want one per decision", alg, len(rec.calls)/2)
	}
	a, b := rec.calls[0], rec.calls[1]
	if len(a.keys) != 1 || a.keys[0] != probe || a.sha != b.sha || len(a.args) != len(b.args) {
		return BenchCall{}, fmt.Errorf("%s: its script call (keys %v) cannot be replayed with other keys", alg, a.keys)
	}
	call := BenchCall{SHA: a.sha}
	for i := range a.args {
		call.Args = append(call.Args, fmt.Sprint(a.args[i]))
		if fmt.Sprint(a.args[i]) != fmt.Sprint(b.args[i]) {
			call.Nonce = append(call.Nonce, i)
		}
	}
	return call, nil
}

type recordedCall struct {
	sha  string
	keys []string
	args []any
}

// recordingScripter records EVALSHA calls and answers each with an
// accepted placeholder decision.
type recordingScripter struct{ calls []recordedCall }

var _ redis.Scripter = (*recordingScripter)(nil)

func (r *recordingScripter) EvalSha(_ context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	r.calls = append(r.calls, recordedCall{sha, slices.Clone(keys), slices.Clone(args)})
	return redis.NewCmdResult(queuedReply, nil)
}

func (r *recordingScripter) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return r.EvalSha(ctx, sha, keys, args...)
}

func (r *recordingScripter) Eval(_ context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return redis.NewCmdResult(nil, fmt.Errorf("bench: scripts must run by SHA"))
}

func (r *recordingScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return r.Eval(ctx, script, keys, args...)
}

func (r *recordingScripter) ScriptExists(_ context.Context, hashes ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(make([]bool, len(hashes)), nil)
}

func (r *recordingScripter) ScriptLoad(_ context.Context, _ string) *redis.StringCmd {
	return redis.NewStringResult("", nil)
}

// bencher runs the measurements of one bench.
type bencher struct {
	cfg      BenchConfig
	base     redis.UniversalClient // cleanup
	nodes    []*redis.Client       // stats: the server, or each master of a cluster
	client   redis.UniversalClient // the workers' connections (a ClusterClient on a cluster)
	progress io.Writer
}

// serverStats is what a run's server-side figures are taken from.
type serverStats struct {
	calls, usec, failed int64
	cpu                 float64 // seconds, user + sys
}

func (b *bencher) stats(ctx context.Context) (serverStats, error) {
	var sum serverStats
	for _, node := range b.nodes {
		s, err := nodeStats(ctx, node)
		if err != nil {
			return sum, err
		}
		sum.calls, sum.usec, sum.failed, sum.cpu = sum.calls+s.calls, sum.usec+s.usec, sum.failed+s.failed, sum.cpu+s.cpu
	}
	return sum, nil
}

// nodeStats reads one server's EVALSHA counters and CPU.
func nodeStats(ctx context.Context, node *redis.Client) (serverStats, error) {
	var s serverStats
	info, err := node.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return s, err
	}
	f := engine.InfoFields(info)
	for _, kv := range strings.Split(f["cmdstat_evalsha"], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "calls":
			s.calls = n
		case "usec":
			s.usec = n
		case "failed_calls", "rejected_calls":
			s.failed += n
		}
	}
	u, _ := strconv.ParseFloat(f["used_cpu_user"], 64)
	sy, _ := strconv.ParseFloat(f["used_cpu_sys"], 64)
	s.cpu = u + sy
	return s, nil
}

// measure runs one algorithm x path: a short warm-up run of ratelab (not
// counted), then Rounds runs of ratelab, alternating with redis-benchmark's
// when comparing.
func (b *bencher) measure(ctx context.Context, alg, path, prefix string, seq *int) (measure.BenchRow, error) {
	cfg := b.cfg
	l := cfg.Limit
	probe, err := algorithms.New(alg, b.base, l)
	if err != nil {
		return measure.BenchRow{}, err
	}
	call, err := CaptureCall(alg, l)
	if err != nil {
		return measure.BenchRow{}, err
	}
	row := measure.BenchRow{
		Algorithm: alg, Path: path, Clients: cfg.Clients, Pipeline: cfg.Pipeline, Keys: cfg.Keys,
		Limit: l.Limit, WindowMS: l.Window.Milliseconds(), LimitDesc: probe.Describe(),
		RatePerS: cfg.Rate, Corrected: cfg.Rate > 0, Runs: []measure.BenchRun{},
	}
	if path == measure.PathDeny {
		row.Keys = 1
	}
	// warm-up, not counted: connections, the Go runtime and the server's
	// script cache settle before the first measured run
	*seq++
	warmPrefix := fmt.Sprintf("%sb%d:", prefix, *seq)
	warm := *b
	warm.cfg.Duration = min(cfg.Duration/4, time.Second)
	if _, err := warm.runRatelab(ctx, call, path, warmPrefix, 0); err != nil {
		return row, fmt.Errorf("warm-up: %w", err)
	}
	if err := b.cleanup(ctx, warmPrefix); err != nil {
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
			*seq++
			runPrefix := fmt.Sprintf("%sb%d:", prefix, *seq)
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
			d := serverStats{calls: after.calls - before.calls, usec: after.usec - before.usec,
				failed: after.failed - before.failed, cpu: after.cpu - before.cpu}
			if tool == "redis-benchmark" && (d.failed > 0 || d.calls < run.Decisions) {
				return row, fmt.Errorf("redis-benchmark: %d of its EVALSHA calls failed or did not run (server saw %d of %d)",
					d.failed, d.calls, run.Decisions)
			}
			if d.calls > 0 {
				run.ServerUSPerCall = float64(d.usec) / float64(d.calls)
			}
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
			acc.calls += d.calls
			acc.usec += d.usec
			acc.cpu += d.cpu
			acc.wall += run.Seconds
			acc.client += run.ClientCPUPct / 100 * run.Seconds
			row.Runs = append(row.Runs, run)
			if b.progress != nil {
				fmt.Fprintf(b.progress, "bench: %s %s %s: %d decisions, %.0f/s, server %.1f µs/call, server CPU %.0f%%, client CPU %.0f%%\n",
					alg, path, tool, run.Decisions, run.PerS, run.ServerUSPerCall, run.ServerCPUPct, run.ClientCPUPct)
			}
			if err := b.cleanup(ctx, runPrefix); err != nil {
				return row, err
			}
		}
	}
	row.DecisionsPerS = medianPerS(rl)
	row.ServerUSPerCall, row.ServerCPUPct, row.ClientCPUPct = rlStats.perCall(), rlStats.cpuPct(), rlStats.clientPct()
	if len(rb) > 0 {
		row.RedisBenchmarkPerS = medianPerS(rb)
		row.RedisBenchmarkServerUSPerCall, row.RedisBenchmarkServerCPUPct = rbStats.perCall(), rbStats.cpuPct()
		row.RedisBenchmarkClientCPUPct = rbStats.clientPct()
		if row.RedisBenchmarkPerS > 0 {
			row.Ratio = row.DecisionsPerS / row.RedisBenchmarkPerS
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

// statsSum adds up one tool's server figures over its runs.
type statsSum struct {
	calls, usec       int64
	cpu, wall, client float64 // seconds
}

func (s statsSum) clientPct() float64 {
	if s.wall == 0 {
		return 0
	}
	return 100 * s.client / s.wall
}

func (s statsSum) perCall() float64 {
	if s.calls == 0 {
		return 0
	}
	return float64(s.usec) / float64(s.calls)
}

func (s statsSum) cpuPct() float64 {
	if s.wall == 0 {
		return 0
	}
	return 100 * s.cpu / s.wall
}

func medianPerS(runs []measure.BenchRun) float64 {
	if len(runs) == 0 {
		return 0
	}
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = r.PerS
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// cleanup removes a run's keys.
func (b *bencher) cleanup(ctx context.Context, prefix string) error {
	keys, err := engine.ScanKeys(ctx, b.base, prefix)
	if err != nil {
		return err
	}
	return engine.DeleteKeys(ctx, b.base, keys)
}

// benchKey is the key of decision i's key number k: 12 digits, as
// redis-benchmark's __rand_int__.
func benchKey(prefix string, k int) string { return fmt.Sprintf("%s{%012d}", prefix, k) }

func hotKey(prefix string) string { return prefix + "{hot}" }

type ratelabRun struct {
	run                     measure.BenchRun
	allowed, denied, errors int64
	hist                    *hdrhistogram.Histogram
}

// runRatelab runs Clients workers, each on its own connection sending
// pipelines of Pipeline EVALSHA calls built from call, until n decisions
// were made (n > 0) or Duration passed.
func (b *bencher) runRatelab(ctx context.Context, call BenchCall, path, prefix string, n int64) (ratelabRun, error) {
	cfg := b.cfg
	var keys []string
	if path == measure.PathAllow {
		keys = make([]string, cfg.Keys)
		for i := range keys {
			keys[i] = benchKey(prefix, i)
		}
	} else {
		keys = []string{hotKey(prefix)}
	}
	var remaining atomic.Int64
	remaining.Store(n)
	interval := time.Duration(0)
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(cfg.Clients*cfg.Pipeline) / cfg.Rate)
	}

	type result struct {
		decisions, allowed, denied, errors int64
		hist                               *hdrhistogram.Histogram
		err                                error
	}
	results := make([]result, cfg.Clients)
	var ready, done sync.WaitGroup
	startGate := make(chan struct{})
	var start time.Time
	for w := range cfg.Clients {
		ready.Add(1)
		done.Add(1)
		go func(w int) {
			defer done.Done()
			r := &results[w]
			r.hist = newHist()
			var conn benchConn
			if c, ok := b.client.(*redis.Client); ok {
				cn := c.Conn()
				defer cn.Close()
				conn = cn
			} else {
				conn = b.client // a cluster: the client routes each pipeline's calls
			}
			err := conn.Ping(ctx).Err() // connect before the clock starts
			ready.Done()
			if err != nil {
				r.err = err
				return
			}
			<-startGate
			r.err = benchWorker(ctx, conn, call, keys, w, cfg, n > 0, &remaining, start, interval, r.hist,
				&r.decisions, &r.allowed, &r.denied, &r.errors)
		}(w)
	}
	ready.Wait()
	cpu0 := processCPU()
	start = time.Now()
	close(startGate)
	done.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0

	out := ratelabRun{hist: newHist()}
	var errs []error
	for _, r := range results {
		out.run.Decisions += r.decisions
		out.allowed += r.allowed
		out.denied += r.denied
		out.errors += r.errors
		out.hist.Merge(r.hist)
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("ratelab run: %w", errs[0])
	}
	if out.errors > 0 && out.errors == out.run.Decisions {
		return out, fmt.Errorf("ratelab run: every decision failed")
	}
	out.run.Tool = "ratelab"
	out.run.Seconds = elapsed.Seconds()
	if out.run.Seconds > 0 {
		out.run.PerS = float64(out.run.Decisions) / out.run.Seconds
		out.run.ClientCPUPct = 100 * cpu.Seconds() / out.run.Seconds
	}
	out.run.P50US = out.hist.ValueAtQuantile(50)
	out.run.P99US = out.hist.ValueAtQuantile(99)
	return out, nil
}

// benchWorker is one client's loop. Commands and their argument slices are
// built once and reused: only the key and the nonce change, in place.
func benchWorker(ctx context.Context, conn benchConn, call BenchCall, keys []string, w int, cfg BenchConfig,
	counted bool, remaining *atomic.Int64, start time.Time, interval time.Duration, h *hdrhistogram.Histogram,
	decisions, allowed, denied, errs *int64) error {
	p := cfg.Pipeline
	cmds := make([]*redis.Cmd, p)
	argv := make([][]any, p)
	nonces := make([][][]byte, p)
	for i := range cmds {
		a := make([]any, 0, 4+len(call.Args))
		a = append(a, "evalsha", call.SHA, "1", keys[0])
		for j, s := range call.Args {
			if slices.Contains(call.Nonce, j) {
				buf := []byte(fmt.Sprintf("%03d%09d", w%1000, 0))
				nonces[i] = append(nonces[i], buf)
				a = append(a, buf)
				continue
			}
			a = append(a, s)
		}
		argv[i] = a
		cmds[i] = redis.NewCmd(ctx, a...)
	}
	rng := rand.New(rand.NewPCG(uint64(w)+1, uint64(start.UnixNano())))
	pipe := conn.Pipeline()
	deadline := start.Add(cfg.Duration)
	var counter uint64
	intervalUS := interval.Microseconds()
	next := start
	for k := 0; ; k++ {
		size := p
		if counted {
			left := remaining.Add(-int64(p))
			if left <= -int64(p) {
				return nil
			}
			if left < 0 {
				size = p + int(left)
			}
		} else if !time.Now().Before(deadline) {
			return nil
		}
		if interval > 0 {
			if wait := time.Until(next); wait > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(wait):
				}
			}
			next = next.Add(interval)
		}
		_, cluster := conn.(*redis.ClusterClient)
		for i := 0; i < size; i++ {
			if len(keys) > 1 {
				argv[i][3] = keys[rng.IntN(len(keys))]
				if cluster {
					cmds[i] = redis.NewCmd(ctx, argv[i]...) // a Cmd caches its slot
				}
			}
			for _, buf := range nonces[i] {
				counter++
				putDigits(buf[3:], counter)
			}
			_ = pipe.Process(ctx, cmds[i])
		}
		sent := time.Now()
		_, err := pipe.Exec(ctx)
		rtt := max(time.Since(sent).Microseconds(), 1)
		if err != nil && !isRedisError(err) {
			return err
		}
		for i := 0; i < size; i++ {
			if cmds[i].Err() != nil {
				*errs++
				continue
			}
			if replyAllowed(cmds[i].Val()) {
				*allowed++
			} else {
				*denied++
			}
		}
		*decisions += int64(size)
		if interval > 0 {
			for i := 0; i < size; i++ {
				_ = h.RecordCorrectedValue(rtt, intervalUS)
			}
		} else {
			_ = h.RecordValues(rtt, int64(size))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// putDigits writes n's last len(buf) decimal digits into buf, zero-padded.
func putDigits(buf []byte, n uint64) {
	for i := len(buf) - 1; i >= 0; i-- {
		buf[i] = byte('0' + n%10)
		n /= 10
	}
}

// isRedisError reports an error reply (the connection is fine).
func isRedisError(err error) bool {
	var re redis.Error
	return err != nil && errors.As(err, &re)
}

// runRedisBenchmark runs redis-benchmark with call's EVALSHA, the same
// clients and pipeline, n requests, keys as ratelab's (__rand_int__ is 12
// digits) and nonces from __rand_int__.
func (b *bencher) runRedisBenchmark(ctx context.Context, call BenchCall, path, prefix string, n int64) (measure.BenchRun, error) {
	cfg := b.cfg
	args := b.redisBenchmarkConn()
	args = append(args, "-c", strconv.Itoa(cfg.Clients), "-P", strconv.Itoa(cfg.Pipeline),
		"-n", strconv.FormatInt(n, 10), "-r", strconv.Itoa(cfg.Keys), "--csv")
	args = append(args, RedisBenchmarkCommand(call, path, prefix)...)
	cmd := exec.CommandContext(ctx, cfg.RedisBenchmark, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return measure.BenchRun{}, fmt.Errorf("redis-benchmark: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	wall := time.Since(start)
	run := measure.BenchRun{Tool: "redis-benchmark", Decisions: n}
	rec, err := parseRedisBenchmarkCSV(stdout.String())
	if err != nil {
		return run, err
	}
	run.PerS = rec["rps"]
	run.P50US = int64(math.Round(rec["p50_latency_ms"] * 1000))
	run.P99US = int64(math.Round(rec["p99_latency_ms"] * 1000))
	if cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(); wall > 0 {
		run.ClientCPUPct = 100 * cpu.Seconds() / wall.Seconds()
	}
	run.Seconds = wall.Seconds()
	if run.PerS > 0 {
		run.Seconds = float64(n) / run.PerS
	}
	return run, nil
}

// RedisBenchmarkCommand is the command line redis-benchmark sends for
// call on path: EVALSHA sha 1 <key> ARGV..., the key "<prefix>{__rand_int__}"
// (allow) or "<prefix>{hot}" (deny), nonces "__rand_int__".
func RedisBenchmarkCommand(call BenchCall, path, prefix string) []string {
	key := prefix + "{__rand_int__}"
	if path == measure.PathDeny {
		key = hotKey(prefix)
	}
	out := []string{"EVALSHA", call.SHA, "1", key}
	for i, a := range call.Args {
		if slices.Contains(call.Nonce, i) {
			a = "__rand_int__"
		}
		out = append(out, a)
	}
	return out
}

// benchConn is where a worker sends its pipelines: its own connection to
// one server, or a ClusterClient.
type benchConn interface {
	Pipeline() redis.Pipeliner
	Ping(ctx context.Context) *redis.StatusCmd
}

// redisBenchmarkConn is how redis-benchmark reaches the server.
func (b *bencher) redisBenchmarkConn() []string {
	if b.cfg.RedisURL != "" {
		return []string{"-u", b.cfg.RedisURL}
	}
	opt := b.nodes[0].Options()
	host, port, _ := strings.Cut(opt.Addr, ":")
	if i := strings.LastIndex(opt.Addr, ":"); i >= 0 {
		host, port = opt.Addr[:i], opt.Addr[i+1:]
	}
	args := []string{"-h", strings.Trim(host, "[]"), "-p", port}
	if opt.DB != 0 {
		args = append(args, "--dbnum", strconv.Itoa(opt.DB))
	}
	return args
}

// parseRedisBenchmarkCSV reads redis-benchmark --csv output: a header line
// and one line per test; it returns the last test's numeric fields.
func parseRedisBenchmarkCSV(out string) (map[string]float64, error) {
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, fmt.Errorf("redis-benchmark: unexpected output %q", out)
	}
	head, last := recs[0], recs[len(recs)-1]
	m := map[string]float64{}
	for i, h := range head {
		if i < len(last) {
			if v, err := strconv.ParseFloat(last[i], 64); err == nil {
				m[h] = v
			}
		}
	}
	if m["rps"] <= 0 {
		return nil, fmt.Errorf("redis-benchmark: no requests per second in %q", out)
	}
	return m, nil
}

// processCPU is this process's CPU time so far, user + sys.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
