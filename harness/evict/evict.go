// Package evict keeps a command from making the user's Redis evict keys
// that are not ratelab's: before a command writes, a server that evicts
// (a maxmemory and an allkeys-* or volatile-* policy) must have room for
// what the command may write plus a margin (Check, CheckOpen); while it
// writes, a watch stops it as soon as the server evicts or its headroom
// runs low (Watch, Start). A server that does not evict refuses writes
// when full (OOM) instead, which the command reports as an error.
package evict

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
)

// NodeMemory is what decides whether writing to one Redis server may make
// it evict keys: its memory limit, eviction policy, memory in use and
// evictions so far.
type NodeMemory struct {
	// Addr is the server's host:port.
	Addr string
	// MaxMemory is the server's maxmemory in bytes; zero means no limit.
	MaxMemory int64
	// Policy is maxmemory-policy ("noeviction", "allkeys-lru",
	// "volatile-ttl", ...).
	Policy string
	// UsedMemory is INFO memory's used_memory in bytes.
	UsedMemory int64
	// EvictedKeys is INFO stats' evicted_keys: keys evicted since the
	// server started (or CONFIG RESETSTAT).
	EvictedKeys int64
}

// Evicting reports whether the server evicts keys when it is full: a
// maxmemory is set and the policy is not noeviction. allkeys-* may evict
// any key; volatile-* any key with a TTL (every key ratelab writes has
// one, and so may the user's).
func (m NodeMemory) Evicting() bool {
	return m.MaxMemory > 0 && m.Policy != "" && m.Policy != "noeviction"
}

// Headroom is MaxMemory - UsedMemory in bytes (negative when over the
// limit); meaningful only when MaxMemory > 0.
func (m NodeMemory) Headroom() int64 { return m.MaxMemory - m.UsedMemory }

// Margin is the headroom in bytes an evicting server must keep beyond what
// a command writes: 1/20 of maxmemory, at least 2 MiB. The eviction watch
// (Watch) stops the command when the headroom falls below it.
func (m NodeMemory) Margin() int64 { return max(2<<20, m.MaxMemory/20) }

// whose describes the keys the policy may evict.
func (m NodeMemory) whose() string {
	if strings.HasPrefix(m.Policy, "volatile-") {
		return "user keys with a TTL"
	}
	return "user keys"
}

// Read reads NodeMemory of every server behind c (the server, or
// each master of a Redis Cluster, in server.Nodes' order). maxmemory and the
// policy come from CONFIG GET; where an ACL refuses CONFIG they come from
// INFO memory (maxmemory, maxmemory_policy). Errors: INFO failed or did
// not carry used_memory.
func Read(ctx context.Context, c redis.UniversalClient) ([]NodeMemory, error) {
	nodes, _, err := server.Nodes(ctx, c)
	if err != nil {
		return nil, err
	}
	out := make([]NodeMemory, len(nodes))
	for i, n := range nodes {
		if out[i], err = readNodeMemory(ctx, n); err != nil {
			return nil, fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
	}
	return out, nil
}

func readNodeMemory(ctx context.Context, n *redis.Client) (NodeMemory, error) {
	m := NodeMemory{Addr: n.Options().Addr}
	info, err := n.Info(ctx, "memory", "stats").Result()
	if err != nil {
		return m, err
	}
	f := server.InfoFields(info)
	var ok bool
	if m.UsedMemory, ok = infoInt(f, "used_memory"); !ok {
		return m, errors.New("INFO memory has no used_memory")
	}
	m.EvictedKeys, _ = infoInt(f, "evicted_keys")
	m.MaxMemory, _ = infoInt(f, "maxmemory")
	m.Policy = f["maxmemory_policy"]
	if cfg, err := n.ConfigGet(ctx, "maxmemory*").Result(); err == nil {
		if v, err := strconv.ParseInt(cfg["maxmemory"], 10, 64); err == nil {
			m.MaxMemory = v
		}
		if p := cfg["maxmemory-policy"]; p != "" {
			m.Policy = p
		}
	}
	return m, nil
}

// infoInt is the integer INFO field name.
func infoInt(f map[string]string, name string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(f[name]), 10, 64)
	return v, err == nil
}

// Error says that writing to the user's Redis could evict, or did
// evict, keys that are not ratelab's: before the command (Estimate larger
// than Headroom less the margin: nothing was written) or while it ran (the
// headroom fell below the margin, or evicted_keys moved: the command was
// stopped).
type Error struct {
	// Addr names the Redis (its address, or a cluster's seeds); Node the
	// server that may evict (host:port).
	Addr, Node string
	Policy     string
	// MaxMemory, Headroom (maxmemory - used_memory) and Margin in bytes, as
	// read when the error was made.
	MaxMemory, Headroom, Margin int64
	// Estimate is the command's upper bound of bytes written; zero when the
	// watch stopped the command.
	Estimate int64
	// Evicted is how many keys the server evicted while the command ran.
	Evicted int64
	// Stopped is true when the command was stopped while it ran (false:
	// refused before it wrote anything).
	Stopped bool
	whose   string
}

func (e *Error) Error() string {
	where := "Redis at " + e.Addr
	if e.Node != "" && e.Node != e.Addr {
		where += " (node " + e.Node + ")"
	}
	switch {
	case !e.Stopped && e.Estimate == 0:
		return fmt.Sprintf("refusing to write to %s: maxmemory-policy %s with %s headroom (maxmemory %s), less than the %s ratelab keeps free: %s could be evicted (--allow-eviction to run anyway)",
			where, e.Policy, FormatBytes(e.Headroom), FormatBytes(e.MaxMemory), FormatBytes(e.Margin), e.whose)
	case !e.Stopped:
		return fmt.Sprintf("refusing to write to %s: maxmemory-policy %s with %s headroom (maxmemory %s); this command may write up to %s of keys: %s could be evicted (--allow-eviction to run anyway)",
			where, e.Policy, FormatBytes(e.Headroom), FormatBytes(e.MaxMemory), EstimateText(e.Estimate), e.whose)
	case e.Evicted > 0:
		return fmt.Sprintf("stopped writing to %s: it evicted %d key(s) while this command ran (maxmemory-policy %s, %s headroom of maxmemory %s): %s may have been evicted; free memory or pass --allow-eviction",
			where, e.Evicted, e.Policy, FormatBytes(e.Headroom), FormatBytes(e.MaxMemory), e.whose)
	}
	return fmt.Sprintf("stopped writing to %s: its headroom fell to %s (maxmemory %s, maxmemory-policy %s; ratelab stops near %s), before %s could be evicted; free memory or pass --allow-eviction",
		where, FormatBytes(e.Headroom), FormatBytes(e.MaxMemory), e.Policy, FormatBytes(e.Margin), e.whose)
}

// FormatBytes shows n bytes in B, KB, MB or GB (powers of 1024, one decimal).
func FormatBytes(n int64) string {
	switch a := float64(n); {
	case n < 0:
		return "-" + FormatBytes(-n)
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", a/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", a/(1<<20))
	default:
		return fmt.Sprintf("%.1f GB", a/(1<<30))
	}
}

// EstimateText shows an estimate of bytes written: FormatBytes, or "an
// unknown amount" when it is negative.
func EstimateText(estimate int64) string {
	if estimate < 0 {
		return "an unknown amount"
	}
	return FormatBytes(estimate)
}

// Check reads the memory of every server behind c (Read)
// and returns an *Error when a server evicts (NodeMemory.Evicting)
// and estimate bytes (the command's upper bound of what it writes;
// negative means unknown, refused on an evicting server) do not fit its
// headroom less its Margin: on a Cluster each server must take the whole
// estimate (all keys may hash to one). addr names the Redis in the error.
// The readings are returned for Watch, also with the error.
func Check(ctx context.Context, c redis.UniversalClient, addr string, estimate int64) ([]NodeMemory, error) {
	ms, err := Read(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("read the memory limit of Redis at %s: %w", addr, err)
	}
	for _, m := range ms {
		if m.Evicting() && (estimate < 0 || estimate > m.Headroom()-m.Margin()) {
			return ms, &Error{Addr: addr, Node: m.Addr, Policy: m.Policy, MaxMemory: m.MaxMemory,
				Headroom: m.Headroom(), Margin: m.Margin(), Estimate: estimate, whose: m.whose()}
		}
	}
	return ms, nil
}

// DefaultEvery is how often Watch reads the servers' memory when a Config
// leaves Every zero (INFO memory and stats: microseconds of the server's
// time).
const DefaultEvery = 25 * time.Millisecond

// Config holds the watch's timing. The zero Config reads every
// DefaultEvery.
type Config struct {
	// Every is the time between two readings of each watched server; a
	// reading that takes longer than 5*Every is skipped.
	Every time.Duration
}

func (c Config) every() time.Duration {
	if c.Every > 0 {
		return c.Every
	}
	return DefaultEvery
}

// Watch reads the memory of the servers of before (Check's
// readings, in the same order) every cfg.Every until ctx ends or the
// returned stop is called, and calls onEvict once, from its own goroutine,
// with an *Error (Stopped) as soon as an evicting server's
// evicted_keys moved past its reading in before, or its headroom fell
// below its Margin plus twice its growth since the previous reading (so a
// fast writer is stopped a reading ahead). Servers that do not evict are not watched (nothing is
// started when none does). A failed reading is skipped: the command's own
// calls see an outage. stop waits for the watcher to end; safe to call
// twice.
func Watch(ctx context.Context, c redis.UniversalClient, addr string, before []NodeMemory, cfg Config, onEvict func(*Error)) (stop func()) {
	every := cfg.every()
	nodes, _, err := server.Nodes(ctx, c)
	var watched []int
	for i, m := range before {
		if m.Evicting() && err == nil && i < len(nodes) {
			watched = append(watched, i)
		}
	}
	if len(watched) == 0 {
		return func() {}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	last := make([]int64, len(before))
	for i, m := range before {
		last[i] = m.UsedMemory
	}
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			for _, i := range watched {
				rctx, rcancel := context.WithTimeout(wctx, every*5)
				m, err := readNodeMemory(rctx, nodes[i])
				rcancel()
				if err != nil {
					continue
				}
				b := before[i]
				m.MaxMemory, m.Policy = b.MaxMemory, b.Policy // as CONFIG said at the start
				growth := max(m.UsedMemory-last[i], 0)
				last[i] = m.UsedMemory
				if ev := m.EvictedKeys - b.EvictedKeys; ev > 0 || m.Headroom() < m.Margin()+2*growth {
					onEvict(&Error{Addr: addr, Node: m.Addr, Policy: m.Policy, MaxMemory: m.MaxMemory,
						Headroom: m.Headroom(), Margin: m.Margin(), Evicted: max(ev, 0), Stopped: true, whose: m.whose()})
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}
