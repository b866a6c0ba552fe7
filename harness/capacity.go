package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/measure"
)

// Capacity defaults (contract: `ratelab capacity` documents them).
const (
	// DefaultCapacityKeys is N, the keys filled per algorithm and limit to
	// measure the used_memory delta per key.
	DefaultCapacityKeys = 10000
	// DefaultActiveKeys is M, the number of active keys the projection is for.
	DefaultActiveKeys = 1_000_000
	// DefaultCapacityWindow is the window of the limits capacity fills: long
	// enough that no key expires (TTL = window) while it is measured.
	DefaultCapacityWindow = time.Hour
	// DefaultCapacityBudget caps the script calls one algorithm x limit may
	// make to fill its keys: N is scaled down (to at least
	// MinCapacityKeys) so that keys x calls per key stays within it. 100,000
	// calls take about 1-2 s (sliding-log's script takes ~12 µs of server
	// time per call) and hold at most ~15 MB.
	DefaultCapacityBudget = 100_000
	// MinCapacityKeys is the fewest keys a used_memory delta is measured over.
	MinCapacityKeys = 10
)

// DefaultCapacityLimits are the limits capacity measures by default: both
// sides of the sorted set's listpack -> skiplist change (128 -> 129 entries).
var DefaultCapacityLimits = []int64{10, 100, 128, 129, 1000, 10000}

// CapacityConfig is what `ratelab capacity` measures.
type CapacityConfig struct {
	// Algorithms are registry names; empty means all.
	Algorithms []string
	// Limits are the limits (cost units per window) to fill keys to; empty
	// means DefaultCapacityLimits.
	Limits []int64
	// Keys is N, the keys per algorithm x limit (before the budget scales
	// it down); 0 means DefaultCapacityKeys.
	Keys int
	// ActiveKeys is M, the keys the projection is for; 0 means DefaultActiveKeys.
	ActiveKeys int64
	// Window is the limits' window; 0 means DefaultCapacityWindow. Keys get
	// this TTL, so it must outlast the measurement.
	Window time.Duration
	// Precision is bucketed-hash's block length; 0 means Window/10.
	Precision time.Duration
	// Budget caps the script calls per algorithm x limit; 0 means
	// DefaultCapacityBudget.
	Budget int64
	// RunID names the key prefix "ratelab:<RunID>:"; empty picks a fresh one.
	RunID string
}

// capacity's fill: workers x pipelined EVALSHA.
const (
	fillWorkers  = 2
	fillPipeline = 256
)

// trimFilled and trimKept are the trim measurement's sizes: keys filled to
// trimFilled entries keep trimKept of them (+1, the trimming decision).
const (
	trimFilled = 200
	trimKept   = 50
	trimKeys   = 20
)

// minCalibrationKeys is the fewest keys the TTL overhead is measured over:
// below that, unrelated allocations of a few KB would swamp it.
const minCalibrationKeys = 1000

// settleTimeout bounds the wait for the server to finish rehashing,
// shrinking its dicts and lazily freeing deleted keys.
const settleTimeout = 3 * time.Second

// RunCapacity fills keys to each limit with the real algorithm scripts (on
// an injected virtual clock, a window long enough that nothing expires),
// and measures MEMORY USAGE, the encoding and the used_memory delta per key.
//
// For each algorithm x limit it fills N keys (cfg.Keys, scaled down so that
// the fill makes at most cfg.Budget calls) from a settled server and divides
// the used_memory delta by N. A calibration fill of N small hashes with a
// TTL gives the per-key overhead that MEMORY USAGE leaves out.
//
// Only keys under "ratelab:<run id>:" are written; all of them are removed
// before RunCapacity returns, also when ctx is cancelled. The server is never
// flushed. On error the returned results hold what was measured.
func RunCapacity(ctx context.Context, rd *engine.Redis, cfg CapacityConfig, progress io.Writer) (*measure.CapacityResults, error) {
	cfg = cfg.withDefaults()
	prefix := engine.KeyPrefix + cfg.RunID + ":"
	res := &measure.CapacityResults{
		Tool: "ratelab", Command: "capacity",
		Config: measure.CapacityRunConfig{
			Algorithms: cfg.Algorithms, Limits: cfg.Limits, Keys: cfg.Keys, ActiveKeys: cfg.ActiveKeys,
			WindowMS: cfg.Window.Milliseconds(), PrecisionMS: cfg.Precision.Milliseconds(),
			Budget: cfg.Budget, Prefix: prefix,
		},
		Redis:     rd.Info,
		StartedAt: time.Now().UTC(),
		Results:   []measure.CapacityRow{},
	}
	c := rd.Client
	nodes, db, err := engine.Nodes(ctx, c)
	if err != nil {
		return res, err
	}
	m := &meter{c: c, nodes: nodes, db: db, progress: progress}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if keys, err := engine.ScanKeys(cctx, c, prefix); err == nil {
			_ = engine.DeleteKeys(cctx, c, keys)
		}
	}()
	err = func() error {
		if err := LoadScripts(ctx, c); err != nil {
			return err
		}
		res.Server = serverConfig(ctx, c)
		// a key of ours with a TTL keeps the db's dicts in MEMORY STATS
		// (an empty db is left out), so settle can see them shrink back
		if err := c.Set(ctx, prefix+"sentinel", "1", cfg.Window).Err(); err != nil {
			return err
		}
		// measured warm: the first fill on a connection allocates more than
		// its keys (tens of KB of server state that stays), so one
		// calibration round runs first and is thrown away
		if _, err := m.calibrate(ctx, prefix+"warm:", minCalibrationKeys, cfg.Window); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		if info, err := c.Info(ctx, "replication").Result(); err == nil {
			if n := engine.InfoFields(info)["connected_slaves"]; n != "" && n != "0" {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s replica(s) attached: the replication backlog may grow with the fills", n))
			}
		}
		calib := map[int]float64{}
		cell := 0
		for _, alg := range cfg.Algorithms {
			for _, limit := range cfg.Limits {
				cell++
				row, err := m.measureCell(ctx, cfg, alg, limit, fmt.Sprintf("%sc%d:", prefix, cell), calib)
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
		return nil
	}()
	res.Warnings = append(res.Warnings, m.warnings...)
	res.DurationMS = time.Since(res.StartedAt).Milliseconds()
	res.Complete = err == nil
	if err != nil {
		res.Error = err.Error()
	}
	return res, err
}

func (cfg CapacityConfig) withDefaults() CapacityConfig {
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = algorithms.Names()
	}
	if len(cfg.Limits) == 0 {
		cfg.Limits = DefaultCapacityLimits
	}
	if cfg.Keys <= 0 {
		cfg.Keys = DefaultCapacityKeys
	}
	if cfg.ActiveKeys <= 0 {
		cfg.ActiveKeys = DefaultActiveKeys
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultCapacityWindow
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultCapacityBudget
	}
	if cfg.RunID == "" {
		cfg.RunID = engine.NewRunID()
	}
	return cfg
}

// CapacityKeys is the number of keys capacity fills for one algorithm x
// limit: wanted, scaled down so that keys x callsPerKey <= budget, but at
// least MinCapacityKeys (and never more than wanted).
func CapacityKeys(wanted int, callsPerKey, budget int64) int {
	n := int64(wanted)
	if callsPerKey > 0 && n*callsPerKey > budget {
		n = max(budget/callsPerKey, MinCapacityKeys)
	}
	return int(min(n, int64(wanted)))
}

// fillCall is one decision of a fill plan: at Offset after the plan's start, Cost units.
type fillCall struct {
	Offset time.Duration
	Cost   int64
}

// FillPlan returns the decisions that bring one key of algorithm alg to a
// full window of limit l.Limit accepted units, as offsets from a start
// aligned to the window, all within one window:
//   - sliding-log and any algorithm without a shortcut: l.Limit decisions of
//     cost 1 spread evenly over the window (one sorted-set member each, as
//     l.Limit single requests would leave);
//   - bucketed-hash: one decision per block of the precision, carrying that
//     block's share of the units (the hash ends as with cost-1 decisions
//     spread over the window);
//   - fixed-window, sliding-counter, reservoir, gcra: one decision of cost
//     l.Limit (the window's counter, the bucket, or the GCRA's theoretical
//     arrival time ends at the limit, as after l.Limit single requests).
func FillPlan(alg string, l algorithms.Limit) []fillCall {
	switch alg {
	case "fixed-window", "sliding-counter", "reservoir", "gcra":
		return []fillCall{{0, l.Limit}}
	case "bucketed-hash":
		p := l.Precision
		if p == 0 {
			p = l.Window / 10
		}
		blocks := int64((l.Window + p - 1) / p)
		var plan []fillCall
		for b := int64(0); b < blocks; b++ {
			share := (b+1)*l.Limit/blocks - b*l.Limit/blocks
			if share > 0 {
				plan = append(plan, fillCall{time.Duration(b) * p, share})
			}
		}
		return plan
	}
	plan := make([]fillCall, l.Limit)
	step := l.Window / time.Duration(l.Limit)
	for i := range plan {
		plan[i] = fillCall{time.Duration(i) * step, 1}
	}
	return plan
}

// meter measures used_memory deltas on one server, or on the masters of a
// Redis Cluster (summed).
type meter struct {
	c        redis.UniversalClient
	nodes    []*redis.Client // where memory is measured: the server, or each master
	db       int
	progress io.Writer
	warnings []string
}

// memSnapshot is what a used_memory delta is taken of: INFO used_memory
// and the memory of the normal clients (their buffers grow and shrink with
// the fills' pipelines, and are no part of the keys).
type memSnapshot struct {
	used, clients int64
	nodes         []memSnapshot // per node of meter.nodes, when there are several
}

// snapshot reads used_memory and, at the same instant (MULTI), the clients'
// memory: the sum of CLIENT LIST's tot-mem, computed on the spot (INFO's
// mem_clients_normal is refreshed only by serverCron, so it lags new
// connections and grown buffers); mem_clients_normal when CLIENT LIST is
// refused.
func (m *meter) snapshot(ctx context.Context) (memSnapshot, error) {
	if len(m.nodes) == 1 {
		return m.snapshotNode(ctx, m.nodes[0])
	}
	var sum memSnapshot
	for _, node := range m.nodes {
		s, err := m.snapshotNode(ctx, node)
		if err != nil {
			return sum, fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		sum.used, sum.clients = sum.used+s.used, sum.clients+s.clients
		sum.nodes = append(sum.nodes, s)
	}
	return sum, nil
}

func (m *meter) snapshotNode(ctx context.Context, node *redis.Client) (memSnapshot, error) {
	var list *redis.StringCmd
	var mem *redis.StringCmd
	_, err := node.TxPipelined(ctx, func(p redis.Pipeliner) error {
		list = p.ClientList(ctx)
		mem = p.Info(ctx, "memory")
		return nil
	})
	if err != nil && mem.Err() != nil {
		return memSnapshot{}, err
	}
	f := engine.InfoFields(mem.Val())
	used, err := strconv.ParseInt(f["used_memory"], 10, 64)
	if err != nil {
		return memSnapshot{}, fmt.Errorf("INFO memory has no used_memory")
	}
	snap := memSnapshot{used: used}
	if list.Err() == nil {
		for _, line := range strings.Split(list.Val(), "\n") {
			for _, field := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(field, "tot-mem="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					snap.clients += n
				}
			}
		}
		return snap, nil
	}
	snap.clients, _ = strconv.ParseInt(f["mem_clients_normal"], 10, 64)
	return snap, nil
}

// delta is the growth of used_memory less the growth of client memory.
func (a memSnapshot) delta(b memSnapshot) int64 {
	return (b.used - a.used) - (b.clients - a.clients)
}

// settle waits until the server has nothing pending that moves used_memory
// on its own: no lazily freed objects, no incremental rehash, no dict
// waiting to shrink (serverCron shrinks one below 10% fill). After
// settleTimeout it gives up and records a warning.
func (m *meter) settle(ctx context.Context) error {
	deadline := time.Now().Add(settleTimeout)
	for {
		ok, why, err := m.settled(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			w := "the server did not settle within " + settleTimeout.String() + " (" + why + "): deltas may be off"
			if !slices.Contains(m.warnings, w) {
				m.warnings = append(m.warnings, w)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (m *meter) settled(ctx context.Context) (bool, string, error) {
	for _, node := range m.nodes {
		ok, why, err := m.settledNode(ctx, node)
		if !ok || err != nil {
			if len(m.nodes) > 1 {
				why = node.Options().Addr + ": " + why
			}
			return ok, why, err
		}
	}
	return true, "", nil
}

func (m *meter) settledNode(ctx context.Context, node *redis.Client) (bool, string, error) {
	var stats *redis.Cmd
	var mem, keyspace *redis.StringCmd
	_, err := node.TxPipelined(ctx, func(p redis.Pipeliner) error {
		stats = p.Do(ctx, "MEMORY", "STATS")
		mem = p.Info(ctx, "memory")
		keyspace = p.Info(ctx, "keyspace")
		return nil
	})
	if err != nil {
		return false, "", fmt.Errorf("MEMORY STATS: %w", err)
	}
	if f := engine.InfoFields(mem.Val()); f["lazyfree_pending_objects"] != "" && f["lazyfree_pending_objects"] != "0" {
		return false, "lazyfree pending", nil
	}
	var keys, expires int64
	if ks := engine.InfoFields(keyspace.Val())["db"+strconv.Itoa(m.db)]; ks != "" {
		for _, kv := range strings.Split(ks, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "keys":
				keys = n
			case "expires":
				expires = n
			}
		}
	}
	db := replyMap(replyMap(stats.Val())["db."+strconv.Itoa(m.db)])
	if db == nil {
		if keys == 0 {
			return true, "", nil // an empty db has no dicts to wait for
		}
		return false, "no MEMORY STATS for the db", nil
	}
	for _, d := range []struct {
		name string
		used int64
	}{{"overhead.hashtable.main", keys}, {"overhead.hashtable.expires", expires}} {
		overhead, ok := db[d.name].(int64)
		if !ok {
			return false, "no " + d.name + " in MEMORY STATS", nil
		}
		// Redis 7.0 counts per key a 24 B dictEntry (and a 16 B robj in
		// the main dict) and 8 B per slot of both tables
		perKey := int64(24)
		if d.name == "overhead.hashtable.main" {
			perKey += 16
		}
		slots := (overhead - d.used*perKey) / 8
		if slots&(slots-1) != 0 {
			return false, "rehashing", nil
		}
		if slots > 4 && d.used*100/slots < 10 {
			return false, "dict waiting to shrink", nil
		}
	}
	return true, "", nil
}

// replyMap turns a map reply (RESP3 map, or RESP2 flat array of pairs)
// into a map keyed by string; nil when v is neither.
func replyMap(v any) map[string]any {
	out := map[string]any{}
	switch m := v.(type) {
	case map[any]any:
		for k, x := range m {
			out[fmt.Sprint(k)] = x
		}
	case map[string]any:
		return m
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			out[fmt.Sprint(m[i])] = m[i+1]
		}
	default:
		return nil
	}
	return out
}

// measureCell fills N keys of alg to limit and measures them.
func (m *meter) measureCell(ctx context.Context, cfg CapacityConfig, alg string, limit int64, prefix string, calib map[int]float64) (measure.CapacityRow, error) {
	l := algorithms.Limit{Limit: limit, Window: cfg.Window}
	if alg == "bucketed-hash" {
		l.Precision = cfg.Precision
	}
	probe, err := algorithms.New(alg, m.c, l)
	if err != nil {
		return measure.CapacityRow{}, err
	}
	plan := FillPlan(alg, l)
	n := CapacityKeys(cfg.Keys, int64(len(plan)), cfg.Budget)
	row := measure.CapacityRow{
		Algorithm: alg, Limit: limit, WindowMS: cfg.Window.Milliseconds(), LimitDesc: probe.Describe(),
		Keys: n, KeysWanted: cfg.Keys, Calls: int64(n) * int64(len(plan)), ActiveKeys: cfg.ActiveKeys,
	}
	calN := max(n, minCalibrationKeys)
	overhead, ok := calib[calN]
	if !ok {
		if overhead, err = m.calibrate(ctx, prefix+"cal:", calN, cfg.Window); err != nil {
			return row, fmt.Errorf("calibration: %w", err)
		}
		calib[calN] = overhead
	}
	row.TTLOverheadBytes = overhead

	// warm: a couple of keys first, so first-use allocations (Lua argument
	// arrays, reply buffers) are not counted; they stay until the cell is dropped
	if _, err := m.fillKeys(ctx, alg, l, plan, prefix+"w:", min(n, 2), time.Time{}); err != nil {
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
	if _, err := m.fillKeys(ctx, alg, l, plan, keyPrefix, n, time.Time{}); err != nil {
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

	keys, err := engine.ScanKeys(ctx, m.c, keyPrefix)
	if err != nil {
		return row, err
	}
	if len(keys) != n {
		return row, fmt.Errorf("filled %d keys, found %d", n, len(keys))
	}
	sort.Strings(keys)
	total, err := engine.MemoryUsage(ctx, m.c, keys)
	if err != nil {
		return row, err
	}
	row.MemoryBytes = int64(math.Round(float64(total) / float64(n)))
	row.KeyNameBytes = len(keys[0])
	if row.Type, row.Encoding, row.Entries, err = describeKey(ctx, m.c, keys[0]); err != nil {
		return row, err
	}
	if row.Entries > 0 {
		row.BytesPerEntry = float64(row.MemoryBytes) / float64(row.Entries)
	}
	row.MemoryWithTTLBytes = float64(row.MemoryBytes) + row.TTLOverheadBytes
	if row.UsedMemoryDeltaBytes > 0 {
		row.Agreement = row.MemoryWithTTLBytes / row.UsedMemoryDeltaBytes
	}
	row.ProjectedBytes = int64(math.Round(row.UsedMemoryDeltaBytes * float64(cfg.ActiveKeys)))
	return row, m.drop(ctx, prefix)
}

// calibrate measures what a key with a TTL costs beyond its MEMORY USAGE at
// n keys: n small hashes (one field, listpack, whose MEMORY USAGE counts
// every allocation at its real size) with a TTL, used_memory delta per key
// minus their MEMORY USAGE.
func (m *meter) calibrate(ctx context.Context, prefix string, n int, ttl time.Duration) (float64, error) {
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
				p.HSet(ctx, k, "f", "1")
				p.PExpire(ctx, k, ttl)
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
	mu, err := engine.MemoryUsage(ctx, m.c, keys)
	if err != nil {
		return 0, err
	}
	overhead := float64(before.delta(after)-mu) / float64(n)
	return overhead, m.drop(ctx, prefix)
}

// drop deletes the keys under prefix and waits for the server to settle.
func (m *meter) drop(ctx context.Context, prefix string) error {
	keys, err := engine.ScanKeys(ctx, m.c, prefix)
	if err != nil {
		return err
	}
	if err := engine.DeleteKeys(ctx, m.c, keys); err != nil {
		return err
	}
	return m.settle(ctx)
}

// fillKeys fills n keys "<prefix>{%06d}" with plan, starting at start (zero:
// a window boundary after VirtualEpoch), with fillWorkers pipelines of
// EVALSHA built by the algorithm's own Allow. Every decision must be
// accepted. It returns the keys.
func (m *meter) fillKeys(ctx context.Context, alg string, l algorithms.Limit, plan []fillCall, prefix string, n int, start time.Time) ([]string, error) {
	if start.IsZero() {
		start = alignUp(VirtualEpoch, l.Window)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s{%06d}", prefix, i)
	}
	var wg sync.WaitGroup
	errs := make([]error, fillWorkers)
	for w := range fillWorkers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			q := &queueScripter{pipe: m.c.Pipeline()}
			lim, err := algorithms.New(alg, q, l)
			if err != nil {
				errs[w] = err
				return
			}
			for i := w; i < n && errs[w] == nil; i += fillWorkers {
				for _, call := range plan {
					if _, err := lim.Allow(ctx, keys[i], call.Cost, algorithms.At(start.Add(call.Offset))); err != nil {
						errs[w] = err
						break
					}
					if q.pipe.Len() >= fillPipeline {
						errs[w] = q.exec(ctx, m.c, true)
					}
				}
			}
			if errs[w] == nil {
				errs[w] = q.exec(ctx, m.c, true)
			}
		}(w)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return keys, nil
}

// measureTrim fills trimKeys sliding-log keys to trimFilled entries, trims
// them with one decision a window later so that trimKept entries (+1) stay,
// and compares them with keys filled to that many entries directly.
func (m *meter) measureTrim(ctx context.Context, cfg CapacityConfig, prefix string) (*measure.TrimResult, error) {
	l := algorithms.Limit{Limit: trimFilled, Window: cfg.Window}
	plan := FillPlan("sliding-log", l)
	start := alignUp(VirtualEpoch, l.Window)
	keys, err := m.fillKeys(ctx, "sliding-log", l, plan, prefix+"t:", trimKeys, start)
	if err != nil {
		return nil, err
	}
	// one decision at the time the (trimFilled-trimKept)-th oldest entry leaves the window
	cut := plan[trimFilled-trimKept-1].Offset + l.Window
	if _, err := m.fillKeys(ctx, "sliding-log", l, []fillCall{{cut, 1}}, prefix+"t:", trimKeys, start); err != nil {
		return nil, err
	}
	tr := &measure.TrimResult{Algorithm: "sliding-log", Keys: trimKeys, FilledEntries: trimFilled}
	var mu int64
	if _, tr.Encoding, tr.Entries, err = describeKey(ctx, m.c, keys[0]); err != nil {
		return nil, err
	}
	if mu, err = engine.MemoryUsage(ctx, m.c, keys); err != nil {
		return nil, err
	}
	tr.MemoryBytes = mu / int64(len(keys))

	fresh := algorithms.Limit{Limit: tr.Entries, Window: cfg.Window}
	fkeys, err := m.fillKeys(ctx, "sliding-log", fresh, FillPlan("sliding-log", fresh), prefix+"f:", trimKeys, start)
	if err != nil {
		return nil, err
	}
	if _, tr.FreshEncoding, _, err = describeKey(ctx, m.c, fkeys[0]); err != nil {
		return nil, err
	}
	if mu, err = engine.MemoryUsage(ctx, m.c, fkeys); err != nil {
		return nil, err
	}
	tr.FreshMemoryBytes = mu / int64(len(fkeys))
	return tr, m.drop(ctx, prefix)
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

// LoadScripts loads every algorithm's script (SCRIPT LOAD), so pipelined
// EVALSHA finds them: pipelines do not fall back to EVAL on NOSCRIPT.
func LoadScripts(ctx context.Context, c redis.Scripter) error {
	for _, s := range algorithms.Scripts() {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
	}
	return nil
}

// queueScripter is a redis.Scripter that queues a limiter's EVALSHA calls on
// a pipeline instead of running them, so fills use the algorithm's own
// Allow (its exact keys and arguments) at pipeline speed. Allow gets a
// placeholder accepted decision; the real replies are checked by exec.
type queueScripter struct {
	pipe redis.Pipeliner
}

var _ redis.Scripter = (*queueScripter)(nil)

var queuedReply = []any{int64(1), int64(0), int64(0), int64(0)}

func (q *queueScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	q.pipe.EvalSha(ctx, sha, keys, args...)
	return redis.NewCmdResult(queuedReply, nil)
}

func (q *queueScripter) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	q.pipe.EvalShaRO(ctx, sha, keys, args...)
	return redis.NewCmdResult(queuedReply, nil)
}

func (q *queueScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	q.pipe.Eval(ctx, script, keys, args...)
	return redis.NewCmdResult(queuedReply, nil)
}

func (q *queueScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	q.pipe.EvalRO(ctx, script, keys, args...)
	return redis.NewCmdResult(queuedReply, nil)
}

func (q *queueScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(make([]bool, len(hashes)), nil)
}

func (q *queueScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return redis.NewStringResult("", nil)
}

// exec runs the queued calls. Calls that failed with NOSCRIPT did not run:
// the scripts are loaded and those calls sent once more. With mustAllow,
// a denied decision is an error.
func (q *queueScripter) exec(ctx context.Context, c redis.UniversalClient, mustAllow bool) error {
	if q.pipe.Len() == 0 {
		return nil
	}
	cmds, err := q.pipe.Exec(ctx)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := LoadScripts(ctx, c); err != nil {
			return err
		}
		var again []redis.Cmder
		for _, cmd := range cmds {
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
				again = append(again, cmd)
			}
		}
		retry, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, cmd := range again {
				p.Process(ctx, redis.NewCmd(ctx, cmd.Args()...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		cmds = append(cmds, retry...)
	} else if err != nil {
		return err
	}
	if !mustAllow {
		return nil
	}
	for _, cmd := range cmds {
		c, ok := cmd.(*redis.Cmd)
		if !ok || redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			continue
		}
		if err := c.Err(); err != nil {
			return err
		}
		if !replyAllowed(c.Val()) {
			return fmt.Errorf("a fill decision was denied (%v): the fill plan overran the limit", c.Args())
		}
	}
	return nil
}

// replyAllowed reads the verdict of a decision script's reply: its first
// element, an integer, is above 0 when the request was accepted (ratelab's
// scripts answer 1; redis_rate's GCRA the units allowed).
func replyAllowed(v any) bool {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	n, ok := arr[0].(int64)
	return ok && n > 0
}

// nodeMemory splits a fill over the masters: the keys under prefix each
// holds (SCAN on it) and the growth of its used_memory between the
// snapshots before and after (one per node, in nodes' order).
func nodeMemory(ctx context.Context, nodes []*redis.Client, before, after []memSnapshot, prefix string) ([]measure.NodeMemory, error) {
	out := make([]measure.NodeMemory, len(nodes))
	for i, node := range nodes {
		keys, err := engine.ScanKeys(ctx, node, prefix)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		out[i] = measure.NodeMemory{Addr: node.Options().Addr, Keys: int64(len(keys))}
		if i < len(before) && i < len(after) {
			out[i].UsedMemoryDeltaBytes = before[i].delta(after[i])
		}
	}
	return out, nil
}
