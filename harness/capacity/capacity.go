// Package capacity measures what rate-limit keys cost in Redis memory:
// `ratelab capacity`. It fills keys to each limit with the real algorithm
// scripts (pipelined EVALSHA on an injected virtual clock), and measures
// MEMORY USAGE, the encoding and the used_memory delta per key, projected
// to many active keys.
package capacity

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/machine"
	"github.com/ratelab/ratelab/harness/server"
	prog "github.com/ratelab/ratelab/internal/progress"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// MachineConsequence ends capacity's warning that the machine, not Redis,
// was the limit (machine.Judge).
const MachineConsequence = "the fills took longer than Redis needs them to; the memory figures do not depend on speed, only the duration does"

// minCalibrationKeys is the fewest keys the TTL overhead is measured over:
// below that, unrelated allocations of a few KB would swamp it.
const minCalibrationKeys = 1000

// Run fills keys to each limit with the real algorithm scripts (on an
// injected virtual clock, a window long enough that nothing expires), and
// measures MEMORY USAGE, the encoding and the used_memory delta per key.
//
// For each algorithm x limit it fills N keys (cfg.Keys, scaled down so that
// the fill makes at most cfg.Budget calls, see KeysFor) from a settled
// server and divides the used_memory delta by N. A calibration fill of N
// small hashes with a TTL gives the per-key overhead that MEMORY USAGE
// leaves out. Zero fields of cfg take their defaults (WithDefaults); a
// configuration that fails Validate is returned as that *field.Error
// before Redis is touched. SCRIPT FLUSH during the run costs nothing: the
// scripts are loaded again and the calls that found none are retried
// (with a warning, as the flush moves used_memory).
//
// Only keys under "ratelab:<run id>:" are written; all of them are removed
// before Run returns, also when ctx is cancelled. The server is never
// flushed. The results are never nil: on error they hold what was
// measured, marked incomplete. progress (nil: none) gets a line per cell.
// Run is not safe to call twice at once on the same RunID.
func Run(ctx context.Context, rd *server.Redis, cfg Config, progress io.Writer) (*measure.CapacityResults, error) {
	cfg = cfg.WithDefaults()
	s := harness.NewSession(rd, cfg.RunID, 0)
	cfg.RunID = s.RunID
	limits := cfg.Limits
	res := &measure.CapacityResults{
		Header: s.Header("capacity", measure.Repro{Limits: limits, TargetSHA256: targets.Digests(cfg.Targets)}),
		Config: measure.CapacityRunConfig{
			Algorithms: append(slices.Clone(cfg.Algorithms), targets.Names(cfg.Targets)...), Limits: counts(cfg.Limits), Keys: cfg.Keys, ActiveKeys: cfg.ActiveKeys,
			WindowMS: cfg.window().Milliseconds(), PrecisionMS: cfg.Limits[0].Precision.Milliseconds(),
			Budget: cfg.Budget, Prefix: s.Prefix,
		},
		Results: []measure.CapacityRow{},
	}
	err := cfg.Validate()
	if err == nil {
		var gctx context.Context
		var guard func() error
		// registered, so that clean skips the live run's keys and removes
		// what a killed one left, as run's and verify's
		if err = s.Start(ctx); err != nil {
			err = fmt.Errorf("register the run: %w", err)
		} else if gctx, guard, err = s.Guard(ctx, cfg.estimateBytes(), progress); err == nil {
			err = harness.GuardErr(guard, measureAll(gctx, s, cfg, res, progress)) // removes the keys
		} else {
			s.RemoveKeysOrSay(ctx, progress)
		}
	}
	err = s.Explain(ctx, err)
	res.DurationMS, res.Complete, res.Error = s.End(err)
	return res, err
}

// measureAll measures every cell of cfg into res, and removes the run's
// keys at the end.
func measureAll(ctx context.Context, s *harness.Session, cfg Config, res *measure.CapacityResults, progress io.Writer) (err error) {
	c := s.Redis.Client
	nodes, db, err := server.Nodes(ctx, c)
	if err != nil {
		return err
	}
	m := &meter{c: c, nodes: nodes, db: db, progress: progress, targets: cfg.Targets}
	m0 := machine.Read(ctx, c)
	defer func() {
		s.RemoveKeysOrSay(ctx, m.progress)
		res.Warnings = append(res.Warnings, m.warnings...)
	}()
	prefix := s.Prefix
	if err := algorithms.LoadScripts(ctx, c); err != nil {
		return err
	}
	res.Server = serverConfig(ctx, c)
	// a key of ours with a TTL keeps the db's dicts in MEMORY STATS
	// (an empty db is left out), so settle can see them shrink back
	if err := c.Set(ctx, prefix+"sentinel", "1", cfg.window()).Err(); err != nil {
		return err
	}
	// measured warm: the first fill on a connection allocates more than
	// its keys (tens of KB of server state that stays), so one
	// calibration round runs first and is thrown away
	if _, err := m.calibrate(ctx, prefix+"warm:", minCalibrationKeys, cfg.window()); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if info, err := c.Info(ctx, "replication").Result(); err == nil {
		if n := server.InfoFields(info)["connected_slaves"]; n != "" && n != "0" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s replica(s) attached: the replication backlog may grow with the fills", n))
		}
	}
	calib := map[int]float64{}
	cell := 0
	algs := append(slices.Clone(cfg.Algorithms), targets.Names(cfg.Targets)...)
	// progress counts the measured fills' calls, the bulk of the work:
	// cells differ by orders of magnitude (one call per key for a counter,
	// the limit per key for sliding-log)
	var calls int64
	for _, alg := range algs {
		for _, l := range cfg.Limits {
			fl := forAlgorithm(alg, l)
			calls += int64(KeysFor(cfg.Keys, fillSteps(alg, fl), cfg.Budget)) * PlanCalls(alg, fl)
		}
	}
	m.pm = prog.Start(progress, "capacity", "fill calls", calls)
	defer m.pm.Stop()
	for _, alg := range algs {
		for _, l := range cfg.Limits {
			limit := l.Count
			cell++
			row, err := m.measureCell(ctx, cfg, alg, l, fmt.Sprintf("%sc%d:", prefix, cell), calib)
			for redos := 0; closed(err) && redos < cellRedos && ctx.Err() == nil; redos++ {
				// the server closed a connection mid-cell (CLIENT KILL, its
				// timeout setting): calls may have run without a reply, so
				// the cell is measured again on keys of its own, new
				// connections taking the closed ones' place
				if kerr := dropKeys(ctx, c, fmt.Sprintf("%sc%d:", prefix, cell)); kerr != nil {
					return fmt.Errorf("%s at limit %d: %w (then removing its keys: %v)", alg, limit, err, kerr)
				}
				cell++
				row, err = m.measureCell(ctx, cfg, alg, l, fmt.Sprintf("%sc%d:", prefix, cell), calib)
			}
			if err != nil {
				return fmt.Errorf("%s at limit %d: %w", alg, limit, err)
			}
			res.Results = append(res.Results, row)
			if progress != nil {
				fmt.Fprintf(progress, "capacity: %s limit %d: %d keys, %s %d B/key, used_memory +%.0f B/key (%d ms)\n",
					alg, limit, row.Keys, row.Encoding, row.MemoryBytes, row.UsedMemoryDeltaBytes, row.FillMS)
			}
		}
	}
	if slices.Contains(cfg.Algorithms, "sliding-log") {
		tr, err := m.measureTrim(ctx, cfg, prefix+"trim:")
		if err != nil {
			return fmt.Errorf("trim measurement: %w", err)
		}
		res.Trim = tr
	}
	ml := machine.Span(m0, machine.Read(ctx, c), MachineConsequence)
	res.Machine = &ml
	if ml.MachineLimited {
		harness.Say(progress, "ratelab: warning: %s\n", ml.Warning)
	}
	return nil
}

// counts are the Counts of ls, in order (the results' header).
func counts(ls []limit.Limit) []int64 {
	out := make([]int64, len(ls))
	for i, l := range ls {
		out[i] = l.Count
	}
	return out
}

// measureCell fills N keys of alg to lim and measures them.
func (m *meter) measureCell(ctx context.Context, cfg Config, alg string, lim limit.Limit, prefix string, calib map[int]float64) (measure.CapacityRow, error) {
	l := forAlgorithm(alg, lim)
	probe, err := targets.NewLimiter(alg, m.targets, m.c, l)
	if err != nil {
		return measure.CapacityRow{}, err
	}
	if err := loadScript(ctx, m.c, probe); err != nil {
		return measure.CapacityRow{}, err
	}
	plan := FillPlan(alg, l)
	if plan == nil {
		return measure.CapacityRow{}, fmt.Errorf("no fill plan for %s (validate the configuration first)", l)
	}
	n := KeysFor(cfg.Keys, fillSteps(alg, l), cfg.Budget)
	row := measure.CapacityRow{
		Algorithm: alg, Limit: l.Count, WindowMS: l.Window.Milliseconds(), LimitDesc: probe.Describe(),
		Keys: n, KeysWanted: cfg.Keys, Calls: int64(n) * int64(len(plan)), ActiveKeys: cfg.ActiveKeys,
	}
	calN := max(n, minCalibrationKeys)
	overhead, ok := calib[calN]
	if !ok {
		if overhead, err = m.calibrate(ctx, prefix+"cal:", calN, cfg.window()); err != nil {
			return row, fmt.Errorf("calibration: %w", err)
		}
		calib[calN] = overhead
	}
	row.TTLOverheadBytes = overhead

	// warm: a couple of keys first, so first-use allocations (Lua argument
	// arrays, reply buffers) are not counted; they stay until the cell is dropped
	if _, err := m.fillKeys(ctx, alg, l, plan, prefix+"w:", min(n, 2), nil); err != nil {
		return row, err
	}
	if err := m.settle(ctx); err != nil {
		return row, err
	}

	keyPrefix := prefix + "k:"
	before, err := m.snapshot(ctx)
	if err != nil {
		return row, err
	}
	start := time.Now()
	if _, err := m.fillKeys(ctx, alg, l, plan, keyPrefix, n, m.pm); err != nil {
		return row, err
	}
	row.FillMS = time.Since(start).Milliseconds()
	if err := m.settle(ctx); err != nil {
		return row, err
	}
	after, err := m.snapshot(ctx)
	if err != nil {
		return row, err
	}
	row.UsedMemoryDeltaBytes = float64(before.delta(after)) / float64(n)
	if len(m.nodes) > 1 {
		if row.Nodes, err = nodeMemory(ctx, m.nodes, before.nodes, after.nodes, keyPrefix); err != nil {
			return row, err
		}
	}

	keys, err := server.ScanKeys(ctx, m.c, keyPrefix)
	if err != nil {
		return row, err
	}
	// a user's script may write several keys per request key (derived
	// keys: "{key}.ts"); its memory per key is the sum over them
	if want := n * RedisKeys(alg, l); len(keys) != want && (len(keys) < n || !slices.Contains(targets.Names(m.targets), alg)) {
		return row, fmt.Errorf("filled %d keys, found %d Redis keys, want %d", n, len(keys), want)
	}
	row.RedisKeys = float64(len(keys)) / float64(n)
	sort.Strings(keys)
	total, err := server.MemoryUsage(ctx, m.c, keys)
	if err != nil {
		return row, err
	}
	row.MemoryBytes = int64(math.Round(float64(total) / float64(n)))
	row.KeyNameBytes = len(keys[0])
	if row.Type, row.Encoding, row.Entries, err = describeKey(ctx, m.c, keys[0]); err != nil {
		return row, err
	}
	if row.Type == "string" {
		row.Entries = int64(len(keys) / n) // the window counters: one value per Redis key
	}
	if row.Entries > 0 {
		row.BytesPerEntry = float64(row.MemoryBytes) / float64(row.Entries)
	}
	// each Redis key of a request key (a script's derived keys) has its TTL
	row.MemoryWithTTLBytes = float64(row.MemoryBytes) + row.TTLOverheadBytes*float64(len(keys))/float64(n)
	if row.UsedMemoryDeltaBytes > 0 {
		row.Agreement = row.MemoryWithTTLBytes / row.UsedMemoryDeltaBytes
	}
	row.ProjectedBytes = int64(math.Round(row.UsedMemoryDeltaBytes * float64(cfg.ActiveKeys)))
	return row, m.drop(ctx, prefix)
}

// bornWithTTL makes calibrate's hash and gives it its TTL in one atomic
// call, so that no kill leaves a key without one (a pipeline of HSET and
// PEXPIRE cut short can).
//
// KEYS[1] the hash; ARGV[1] its TTL, ms; reply: PEXPIRE's.
var bornWithTTL = redis.NewScript(`redis.call('HSET', KEYS[1], 'f', '1') return redis.call('PEXPIRE', KEYS[1], ARGV[1])`)

// calibrate measures what a key with a TTL costs beyond its MEMORY USAGE at
// n keys: n small hashes (one field, listpack, whose MEMORY USAGE counts
// every allocation at its real size) with a TTL, used_memory delta per key
// minus their MEMORY USAGE.
func (m *meter) calibrate(ctx context.Context, prefix string, n int, ttl time.Duration) (float64, error) {
	// cached before the first snapshot: the script cache is not a key's cost
	if err := bornWithTTL.Load(ctx, m.c).Err(); err != nil {
		return 0, err
	}
	if err := m.settle(ctx); err != nil {
		return 0, err
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s{%06d}", prefix, i)
	}
	before, err := m.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	for lo := 0; lo < n; lo += fillPipeline {
		_, err := m.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys[lo:min(lo+fillPipeline, n)] {
				bornWithTTL.Eval(ctx, p, []string{k}, ttl.Milliseconds()) // EVAL: a SCRIPT FLUSH meanwhile is no NOSCRIPT
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if err := m.settle(ctx); err != nil {
		return 0, err
	}
	after, err := m.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	mu, err := server.MemoryUsage(ctx, m.c, keys)
	if err != nil {
		return 0, err
	}
	overhead := float64(before.delta(after)-mu) / float64(n)
	return overhead, m.drop(ctx, prefix)
}

// drop deletes the keys under prefix and waits for the server to settle.
func (m *meter) drop(ctx context.Context, prefix string) error {
	keys, err := server.ScanKeys(ctx, m.c, prefix)
	if err != nil {
		return err
	}
	if err := server.DeleteKeys(ctx, m.c, keys); err != nil {
		return err
	}
	return m.settle(ctx)
}

// describeKey returns TYPE, OBJECT ENCODING and the element count of key.
func describeKey(ctx context.Context, c redis.UniversalClient, key string) (typ, enc string, entries int64, err error) {
	if typ, err = c.Type(ctx, key).Result(); err != nil {
		return
	}
	if enc, err = c.ObjectEncoding(ctx, key).Result(); err != nil {
		return
	}
	switch typ {
	case "zset":
		entries, err = c.ZCard(ctx, key).Result()
	case "hash":
		entries, err = c.HLen(ctx, key).Result()
	case "set":
		entries, err = c.SCard(ctx, key).Result()
	case "list":
		entries, err = c.LLen(ctx, key).Result()
	default:
		entries = 1
	}
	return
}

// serverConfig reads the encodings' thresholds; zero when CONFIG is refused.
func serverConfig(ctx context.Context, c redis.UniversalClient) measure.CapacityServerInfo {
	var s measure.CapacityServerInfo
	get := func(name string) int64 {
		v, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return 0
		}
		n, _ := strconv.ParseInt(v[name], 10, 64)
		return n
	}
	s.ZsetMaxListpackEntries = get("zset-max-listpack-entries")
	s.HashMaxListpackEntries = get("hash-max-listpack-entries")
	return s
}

// loadScript loads the script of a user's limiter (the built-ins' are
// loaded by algorithms.LoadScripts), so that its pipelined EVALSHA finds it.
func loadScript(ctx context.Context, c redis.UniversalClient, lim algorithms.Limiter) error {
	s, ok := lim.(algorithms.Scripted)
	if !ok {
		return nil
	}
	call, err := s.Call("{load}", 1, algorithms.At(harness.VirtualEpoch))
	if err != nil {
		return err
	}
	if err := call.Script.Load(ctx, c).Err(); err != nil {
		return fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	return nil
}

// cellRedos bounds how many times in a row a cell is measured again after
// the server closed a connection (CLIENT KILL, its timeout setting): a
// count, not a time, since a cell's fill takes seconds and longer on a
// loaded machine (a 2 s bound from the first closing let a third CLIENT KILL
// 0.6 s later end capacity at load 4, its redo still filling).
const cellRedos = 5

// closed reports whether err is the server closing a connection, in its
// chain or, once formatted into a message ("sliding-log: EOF"), its text.
func closed(err error) bool {
	ce := server.Cause(err)
	return ce != nil && ce.Kind == server.Closed
}

// dropKeys removes every key under prefix.
func dropKeys(ctx context.Context, c redis.UniversalClient, prefix string) error {
	keys, err := server.ScanKeys(ctx, c, prefix)
	if err != nil {
		return err
	}
	return server.DeleteKeys(ctx, c, keys)
}
