package capacity

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
	prog "github.com/ratelab/ratelab/internal/progress"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/targets"
)

// settleTimeout bounds the wait for the server to finish rehashing,
// shrinking its dicts and lazily freeing deleted keys.
const settleTimeout = 3 * time.Second

// meter measures used_memory deltas on one server, or on the masters of a
// Redis Cluster (summed).
type meter struct {
	c        redis.UniversalClient
	nodes    []*redis.Client // where memory is measured: the server, or each master
	db       int
	progress io.Writer
	warnings []string
	targets  []targets.Target // the user's limiters, by name
	pm       *prog.Meter      // counts the measured fills' calls (nil: no progress shown)
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
		return memSnapshot{}, queuedErr(err, list, mem)
	}
	f := server.InfoFields(mem.Val())
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
		return false, "", fmt.Errorf("MEMORY STATS: %w", queuedErr(err, stats, mem, keyspace))
	}
	if f := server.InfoFields(mem.Val()); f["lazyfree_pending_objects"] != "" && f["lazyfree_pending_objects"] != "0" {
		return false, "lazyfree pending", nil
	}
	var keys, expires int64
	if ks := server.InfoFields(keyspace.Val())["db"+strconv.Itoa(m.db)]; ks != "" {
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

// nodeMemory splits a fill over the masters: the keys under prefix each
// holds (SCAN on it) and the growth of its used_memory between the
// snapshots before and after (one per node, in nodes' order).
func nodeMemory(ctx context.Context, nodes []*redis.Client, before, after []memSnapshot, prefix string) ([]measure.NodeMemory, error) {
	out := make([]measure.NodeMemory, len(nodes))
	for i, node := range nodes {
		keys, err := server.ScanKeys(ctx, node, prefix)
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

// queuedErr is the error of a transaction (err) as the command that made
// Redis discard it said it: EXECABORT hides why (OOM, READONLY, NOPERM).
func queuedErr(err error, cmds ...redis.Cmder) error {
	if err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		return err
	}
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && cerr != err {
			return cerr
		}
	}
	return err
}
