// Package bench measures decisions per second and latency of each
// algorithm against a real Redis (`ratelab bench`), on two paths: allow
// (many keys, nearly every decision accepted) and deny (one hot key held at
// its limit). It sends each algorithm's own script call (algorithms.Scripted)
// by EVALSHA in pipelines from many connections, and can run Debian's
// redis-benchmark with the very same call in alternating runs, to show how
// much of the time is the load generator's.
//
// Config says what to measure, Config.Validate checks it (errors name the
// field, see package field), Run measures and returns measure.BenchResults.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/machine"
	"github.com/ratelab/ratelab/harness/server"
	prog "github.com/ratelab/ratelab/internal/progress"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// Defaults of `ratelab bench` (Config.WithDefaults).
const (
	DefaultClients  = 50
	DefaultPipeline = 1
	// DefaultDuration is the first run's length; DefaultCompareDuration
	// when comparing with redis-benchmark.
	DefaultDuration        = 3 * time.Second
	DefaultCompareDuration = time.Second
	DefaultKeys            = 100_000
	// DefaultRounds is the rounds of alternating ratelab and
	// redis-benchmark runs when comparing (one run of each per round).
	// Many short runs ride out bursts of other load on a shared machine
	// better than a few long ones.
	DefaultRounds = 9
)

// Size bounds of a bench: every client holds Pipeline prepared calls, and
// the allow path's key names are built once, before the clock starts.
const (
	// MaxClients is the most connections a bench opens.
	MaxClients = 1000
	// MaxPipeline is the most decisions per pipeline.
	MaxPipeline = 10_000
	// MaxKeys is the largest allow-path key space: its names take about
	// 60 bytes of client memory each (600 MB at the bound).
	MaxKeys = 10_000_000
	// MaxProcs is the largest GOMAXPROCS a bench sets: past it the Go
	// runtime's threads, not Redis, are what is measured (and at 10,000
	// threads the runtime aborts).
	MaxProcs = 256
	// MaxDenyLimit is the largest limit the deny path takes: its hot key
	// is filled by the warm-up (under two seconds of calls).
	MaxDenyLimit = 100_000
	// MaxRounds is the most runs of each tool per algorithm and path.
	MaxRounds = 1000
)

// MachineConsequence ends bench's warning that the machine, not Redis,
// was the limit (machine.Judge).
const MachineConsequence = "decisions/s and latencies measure this machine's contention, not Redis: bench on a quieter machine, or leave redis-server a core of its own (--procs)"

// DefaultLimit is the limit bench decides against: 100 per minute, so the
// allow path's keys never fill within a run and the deny path's hot key
// stays full.
var DefaultLimit = limit.Limit{Count: 100, Window: time.Minute}

// Config is what `ratelab bench` measures. Start from Config{}.WithDefaults(): the
// zero Limit, Clients, Pipeline, Keys and Paths are invalid (Validate);
// every other field's zero value means what its comment says.
type Config struct {
	// Algorithms are registry names; empty means all. Each must be an
	// algorithms.Scripted limiter.
	Algorithms []string
	// Targets are limiters of the user's (scripts), measured after
	// Algorithms and named by their Name. Each must be algorithms.Scripted
	// with one key and no argument built from the clock: bench replays one
	// call with the key and the nonces changed (see CallOf).
	Targets []targets.Target
	// Paths are measure.PathAllow and/or measure.PathDeny, at least one.
	Paths []string
	// Limit is the limit every decision is made against: valid
	// (limit.Limit.Validate) with Window <= harness.MaxRunWindow. On the
	// deny path the hot key must reach it: a deny path that never denies
	// stops the bench with an error naming "limit".
	Limit limit.Limit
	// Clients is the number of connections (1..MaxClients), each with one
	// worker sending pipelines of Pipeline decisions (1..MaxPipeline,
	// EVALSHA) and waiting for the replies.
	Clients  int
	Pipeline int
	// Duration bounds the first run of each algorithm x path; later runs
	// (and redis-benchmark's) make as many decisions as it did, from the
	// same starting state. Zero means DefaultDuration, or
	// DefaultCompareDuration when comparing. Requests, when > 0, fixes
	// that number instead; zero means by Duration.
	Duration time.Duration
	Requests int64
	// Keys is the allow path's key space (1..MaxKeys): each decision picks
	// one of Keys keys uniformly at random (redis-benchmark -r Keys).
	Keys int
	// Rate is the target decisions per second of all clients together; 0
	// sends as fast as replies come back (closed loop). With a rate,
	// latencies are corrected for coordinated omission (HdrHistogram
	// RecordCorrectedValue at each client's interval). Not with
	// CompareRedisBenchmark: redis-benchmark cannot pace.
	Rate float64
	// CompareRedisBenchmark also runs redis-benchmark with the same script,
	// EVALSHA arguments, clients and pipeline, alternating with ratelab's
	// runs. Not on a Redis Cluster (Run returns an error).
	CompareRedisBenchmark bool
	// RedisBenchmark is the redis-benchmark binary; "" means from PATH.
	// Validate checks it is there when comparing.
	RedisBenchmark string
	// RedisURL is the Redis as the user named it (engine.OpenWith's spec,
	// "" for none): redis-benchmark reaches it by it (-u) when it is a
	// redis:// or rediss:// URL, else by -h/-p of the Redis address.
	RedisURL string
	// Rounds is how many runs of each tool per algorithm x path: 0 means 1,
	// or DefaultRounds when comparing. Figures are medians.
	Rounds int
	// Procs is GOMAXPROCS while runs are measured (0 leaves it): with 2
	// cores, 1 leaves the other core to redis-server.
	Procs int
	// CPUProfile, when not nil, receives ratelab's CPU profile of the
	// whole bench (runtime/pprof, for go tool pprof); the caller closes it
	// after Run. A profile that cannot start is an error naming
	// "cpuprofile".
	CPUProfile io.Writer
	// RunID names the key prefix "ratelab:<RunID>:"; empty picks a fresh one.
	RunID string
}

// Validate checks cfg and returns an error naming the field (a
// *field.Error): "algorithms" (registered names of Scripted limiters),
// "targets" (targets.Check, and each must be replayable: CallOf),
// "paths" (allow and/or deny, at least one), "limit", "window",
// "precision", "clients", "pipeline", "duration" (>= 0), "requests" (>= 0),
// "keys", "rate" (finite, >= 0, none when comparing), "rounds" (>= 0),
// "procs" (>= 0), and "compare-redis-benchmark" (the binary must be found).
// The bounds are in the fields' comments.
func (cfg Config) Validate() error {
	if err := targets.CheckAlgorithms(cfg.Algorithms); err != nil {
		return &field.Error{Name: "algorithms", Err: err}
	}
	if err := targets.Check(cfg.Targets); err != nil {
		return err
	}
	if len(cfg.Paths) == 0 {
		return field.Errorf("paths", "give allow, deny or both")
	}
	for _, p := range cfg.Paths {
		if !slices.Contains(measure.BenchPaths, p) {
			return field.Errorf("paths", "unknown path %q (want allow, deny)", p)
		}
	}
	l := cfg.Limit
	if err := l.Validate(); err != nil {
		return err
	}
	switch {
	case l.Count > MaxDenyLimit && slices.Contains(cfg.Paths, "deny"):
		return field.Errorf("limit", "at most %d with the deny path (its hot key must fill within the warm-up), got %d", MaxDenyLimit, l.Count)
	case l.Window > harness.MaxRunWindow:
		return field.Errorf("window", "must be at most %s (ten years), got %s", limit.FormatWindow(harness.MaxRunWindow), limit.FormatWindow(l.Window))
	case cfg.Clients < 1 || cfg.Clients > MaxClients:
		return field.Errorf("clients", "must be in 1..%d, got %d", MaxClients, cfg.Clients)
	case cfg.Pipeline < 1:
		return field.Errorf("pipeline", "must be >= 1, got %d", cfg.Pipeline)
	case cfg.Pipeline > MaxPipeline:
		return field.Errorf("pipeline", "must be at most %d, got %d", MaxPipeline, cfg.Pipeline)
	case cfg.Duration < 0:
		return field.Errorf("duration", "must be > 0, got %s", cfg.Duration)
	case cfg.Requests < 0:
		return field.Errorf("requests", "must be >= 0, got %d", cfg.Requests)
	case cfg.Keys < 1:
		return field.Errorf("keys", "must be >= 1, got %d", cfg.Keys)
	case cfg.Keys > MaxKeys:
		return field.Errorf("keys", "must be at most %d (each key's name is held by the client), got %d", MaxKeys, cfg.Keys)
	case cfg.Rate < 0:
		return field.Errorf("rate", "must be >= 0, got %g", cfg.Rate)
	case math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return field.Errorf("rate", "must be a finite number >= 0, got %g", cfg.Rate)
	case cfg.Rounds < 0:
		return field.Errorf("rounds", "must be >= 0, got %d", cfg.Rounds)
	case cfg.Procs < 0 || cfg.Procs > MaxProcs:
		return field.Errorf("procs", "must be in 0..%d, got %d", MaxProcs, cfg.Procs)
	case cfg.Rounds > MaxRounds:
		return field.Errorf("rounds", "must be at most %d, got %d", MaxRounds, cfg.Rounds)
	case cfg.Rate > 0 && cfg.CompareRedisBenchmark:
		return field.Errorf("rate", "redis-benchmark cannot pace its requests; compare without a rate")
	}
	for _, a := range cfg.Algorithms {
		lim, err := targets.NewAlgorithm(a, nil, l)
		if err != nil {
			return &field.Error{Name: "limit", Err: err}
		}
		if _, ok := lim.(algorithms.Scripted); !ok {
			return notScripted(a)
		}
	}
	for _, t := range cfg.Targets {
		lim, err := t.New(nil, l)
		if err != nil {
			return &field.Error{Name: "targets", Err: fmt.Errorf("%s: %w", t.Name, err)}
		}
		if _, err := CallOf(lim); err != nil {
			return &field.Error{Name: "targets", Err: err}
		}
	}
	if cfg.CompareRedisBenchmark {
		bin := cfg.WithDefaults().RedisBenchmark
		if _, err := exec.LookPath(bin); err != nil {
			return field.Errorf("compare-redis-benchmark", "%s not found (Debian: apt-get install redis-tools)", bin)
		}
	}
	return nil
}

func notScripted(name string) error {
	return field.Errorf("algorithms", "%s is not a Scripted limiter: bench replays the one script call of each decision", name)
}

// WithDefaults returns cfg with its zero fields set to their defaults: the
// bench `ratelab bench` runs without flags (but for its --procs 1). Every
// algorithm, both paths, DefaultLimit, DefaultClients connections,
// pipelines of DefaultPipeline, DefaultKeys keys; Duration DefaultDuration
// (DefaultCompareDuration when comparing), Rounds 1 (DefaultRounds when
// comparing), RedisBenchmark "redis-benchmark": so set
// CompareRedisBenchmark before. Run calls it after Validate, which checks
// cfg as given (a zero Limit, Clients, Pipeline, Keys or Paths is refused
// there, not defaulted): start from Config{}.WithDefaults().
func (cfg Config) WithDefaults() Config {
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = algorithms.Names()
	}
	if len(cfg.Paths) == 0 {
		cfg.Paths = slices.Clone(measure.BenchPaths)
	}
	cfg.Limit = cmp.Or(cfg.Limit, DefaultLimit)
	cfg.Clients = cmp.Or(cfg.Clients, DefaultClients)
	cfg.Pipeline = cmp.Or(cfg.Pipeline, DefaultPipeline)
	cfg.Keys = cmp.Or(cfg.Keys, DefaultKeys)
	duration, rounds := DefaultDuration, 1
	if cfg.CompareRedisBenchmark {
		duration, rounds = DefaultCompareDuration, DefaultRounds
	}
	cfg.Duration = cmp.Or(cfg.Duration, duration)
	cfg.Rounds = cmp.Or(cfg.Rounds, rounds)
	cfg.RedisBenchmark = cmp.Or(cfg.RedisBenchmark, "redis-benchmark")
	return cfg
}

// Run measures decisions per second and latency of each algorithm on each
// path against rd, and with CompareRedisBenchmark runs redis-benchmark
// with the same EVALSHA call in alternating runs (A B, B A, A B, ...), each
// run from fresh keys and making the same number of decisions. Scripts read
// Redis TIME (no injected clock), as in production. Keys are under the
// session's prefix "ratelab:<RunID>:" and removed after each run, and at
// the end also after ctx is cancelled.
//
// The results are returned also when err != nil, marked incomplete with
// the rows measured so far (none for a cfg that Validate refuses: its
// error is returned before any Redis call). Calls refused with NOSCRIPT (a SCRIPT FLUSH during
// the bench) are loaded again and resent, never counted; other error
// replies are counted in the row's Errors, not as decisions. A deny path
// whose hot key is never denied is an error naming "limit". progress, when
// not nil, gets one line per run.
func Run(ctx context.Context, rd *server.Redis, cfg Config, progress io.Writer) (*measure.BenchResults, error) {
	invalid := cfg.Validate()
	cfg = cfg.WithDefaults()
	sess := harness.NewSession(rd, cfg.RunID, 0)
	cfg.RunID = sess.RunID
	res := &measure.BenchResults{
		Header: sess.Header("bench", measure.Repro{Clients: cfg.Clients, Limits: []limit.Limit{cfg.Limit},
			TargetSHA256: targets.Digests(cfg.Targets)}),
		Config: measure.BenchRunConfig{
			Algorithms: append(slices.Clone(cfg.Algorithms), targets.Names(cfg.Targets)...), Paths: cfg.Paths, Limit: cfg.Limit.Count, WindowMS: cfg.Limit.Window.Milliseconds(),
			Clients: cfg.Clients, Pipeline: cfg.Pipeline, DurationMS: cfg.Duration.Milliseconds(), Requests: cfg.Requests,
			Keys: cfg.Keys, RatePerS: cfg.Rate, Rounds: cfg.Rounds, Procs: cfg.Procs,
			CompareRedisBenchmark: cfg.CompareRedisBenchmark, Prefix: sess.Prefix,
		},
		Results: []measure.BenchRow{},
	}
	guard := func() error { return nil }
	err := func() error {
		if invalid != nil {
			return invalid
		}
		if cfg.CPUProfile != nil {
			if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
				return field.Errorf("cpuprofile", "%w", err)
			}
			defer pprof.StopCPUProfile()
		}
		nodes, _, err := server.Nodes(ctx, rd.Client) // the server, or a cluster's masters: their stats are summed
		if err != nil {
			return err
		}
		if len(nodes) > 1 && cfg.CompareRedisBenchmark {
			return fmt.Errorf("redis-benchmark cannot compare on a Redis Cluster: its --cluster mode does not route EVALSHA by key (MOVED); bench the cluster without comparing")
		}
		defer sess.RemoveKeysOrSay(ctx, progress)
		// registered, so that clean skips the live bench and removes what a
		// killed one left
		if err := sess.Start(ctx); err != nil {
			return fmt.Errorf("register the bench: %w", err)
		}
		ctx, done, err := sess.Guard(ctx, cfg.estimateBytes(), progress)
		if err != nil {
			return err
		}
		guard = done
		if cfg.CompareRedisBenchmark {
			v, err := exec.Command(cfg.RedisBenchmark, "--version").CombinedOutput()
			if err != nil {
				return fmt.Errorf("redis-benchmark: %w (Debian: apt-get install redis-tools)", err)
			}
			res.Config.RedisBenchmark = strings.TrimSpace(string(v))
		}
		var user *server.TempUser
		if cfg.CompareRedisBenchmark && needsLogin(nodes[0].Options()) {
			// redis-benchmark reads a password only from its command line
			// (-a, -u), which every user of the machine can read: it logs in
			// as a one-time user instead, never with the user's password
			if user, err = server.NewTempUser(ctx, rd, sess.Prefix); err != nil {
				return field.Errorf("compare-redis-benchmark", "redis-benchmark takes a password only on its command line, "+
					"where every user of this machine can read it; ratelab gives it a one-time ACL user instead, which this login may not create (%w): compare with a login allowed ACL SETUSER, or bench without comparing", err)
			}
			defer func() {
				if err := user.Close(ctx); err != nil {
					fmt.Fprintf(progress, "ratelab: %v (ratelab clean removes it)\n", err)
				}
			}()
		}
		if err := algorithms.LoadScripts(ctx, rd.Client); err != nil {
			return err
		}
		if cfg.Procs > 0 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cfg.Procs))
		}
		client := workerClient(rd.Client, cfg.Clients)
		defer func() { _ = client.Close() }() // ratelab's own worker pool: nothing to tell the user
		b := &bencher{cfg: cfg, sess: sess, nodes: nodes, user: user, client: client, progress: progress}
		algs := append(slices.Clone(cfg.Algorithms), targets.Names(cfg.Targets)...)
		pm := prog.Start(progress, "bench", "rows", int64(len(algs)*len(cfg.Paths)))
		defer pm.Stop()
		m0 := machine.Read(ctx, rd.Client)
		for _, alg := range algs {
			for _, path := range cfg.Paths {
				row, err := b.measure(ctx, alg, path)
				pm.Add(1)
				if err != nil {
					if _, ok := field.Name(err); ok {
						return err // says which algorithm and path itself
					}
					return fmt.Errorf("%s %s path: %w", alg, path, err)
				}
				res.Results = append(res.Results, row)
			}
		}
		m := machine.Span(m0, machine.Read(ctx, rd.Client), MachineConsequence)
		res.Machine = &m
		if m.MachineLimited {
			harness.Say(progress, "ratelab: warning: %s\n", m.Warning)
		}
		return nil
	}()
	err = harness.GuardErr(guard, err)
	err = sess.Explain(ctx, err)
	res.DurationMS, res.Complete, res.Error = sess.End(err)
	return res, err
}

// workerClient is the workers' client: on one server, one connection per
// worker (pipelines on those same connections), RESP2, no retries; on a
// Redis Cluster, a ClusterClient that splits each pipeline by slot over the
// masters, clients connections per master.
func workerClient(base redis.UniversalClient, clients int) redis.UniversalClient {
	if cc, ok := base.(*redis.ClusterClient); ok {
		opt := *cc.Options()
		opt.Protocol = 2
		opt.PoolSize = clients // per master
		opt.MinIdleConns = 0
		opt.ReadTimeout = 30 * time.Second
		opt.WriteTimeout = 30 * time.Second
		opt.MaxRetries = -1
		cc := redis.NewClusterClient(&opt)
		server.Track(cc) // Ctrl-C ends a call waiting on a Redis that hangs
		return cc
	}
	opt := *base.(*redis.Client).Options()
	opt.Protocol = 2       // no RESP3 push handling per reply
	opt.PoolSize = clients // one connection per worker
	opt.MinIdleConns = 0
	opt.PipelinePoolSize = -1 // pipelines on those same connections
	opt.ReadTimeout = 30 * time.Second
	opt.WriteTimeout = 30 * time.Second
	opt.MaxRetries = -1
	c := redis.NewClient(&opt)
	server.Track(c) // Ctrl-C ends a call waiting on a Redis that hangs
	return c
}
