package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/measure"
)

// A run registers itself in the Redis it writes to with two keys under its
// own prefix (so an ACL on ~ratelab:* covers them):
//
//   - its marker "ratelab:<run id>:~alive", with a TTL of AliveTTL that the
//     run refreshes every AliveEvery while it lives: `ratelab clean` never
//     removes the keys of a run whose marker is there (unless the run's
//     process is known to be gone, see RunRecord.Process), nor those of a
//     run whose process on this machine is stopped, marker or not (a
//     suspended run cannot refresh it);
//   - its record "ratelab:<run id>:~run", with a TTL of RecordTTL: `ratelab
//     clean` removes only the keys of runs that left a record (or that the
//     user names with --run).
//
// Both hold the RunRecord as JSON and are removed last with the run's keys.
const (
	MarkerSuffix = "~alive"
	RecordSuffix = "~run"
	AliveTTL     = 5 * time.Second
	AliveEvery   = time.Second
	RecordTTL    = 30 * 24 * time.Hour
)

// MarkerKey and RecordKey are the keys a run registers under its prefix.
func MarkerKey(runID string) string { return RunPrefix(runID) + MarkerSuffix }

// RecordKey: see MarkerKey.
func RecordKey(runID string) string { return RunPrefix(runID) + RecordSuffix }

// accessCheckOnly reports whether keys (under prefix) are all CheckAccess's.
func accessCheckOnly(prefix string, keys []string) bool {
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix+AccessCheckInfix) {
			return false
		}
	}
	return len(keys) > 0
}

func isMetaKey(k string) bool {
	return strings.HasSuffix(k, ":"+MarkerSuffix) || strings.HasSuffix(k, ":"+RecordSuffix)
}

// RunRecord is what a run writes about itself (Register): measure.RunRecord.
type RunRecord = measure.RunRecord

// Registration is a run's registration in a Redis (Register). Its methods
// are safe for concurrent use.
type Registration struct {
	c        redis.UniversalClient
	marker   string
	record   string
	value    []byte
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex // missing's
	vanished atomic.Bool
	// refreshed is when the marker's TTL was last set (Unix ns)
	refreshed atomic.Int64
	// runIDs are the servers' run_ids when the run registered (Check);
	// addr names the server in messages.
	runIDs map[string]string
	addr   string
}

// Register writes run runID's marker (first) and record (MarkerKey,
// RecordKey) in c and refreshes the marker every AliveEvery until Stop or
// until ctx ends. Errors: either write failed (an unreachable, read-only or
// out-of-memory Redis, a user without SET on ~ratelab:*).
func Register(ctx context.Context, c redis.UniversalClient, runID string) (*Registration, error) {
	rec := RunRecord{RunID: runID, Started: time.Now().UTC(), PID: os.Getpid(), Process: procIdentity(os.Getpid())}
	rec.Host, _ = os.Hostname()
	value, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	// the marker first: a run whose keys a clean can see is already marked alive
	if err := c.Set(ctx, MarkerKey(runID), value, AliveTTL).Err(); err != nil {
		return nil, fmt.Errorf("register run %s: %w", runID, err)
	}
	if err := c.Set(ctx, RecordKey(runID), value, RecordTTL).Err(); err != nil {
		return nil, fmt.Errorf("register run %s: %w", runID, err)
	}
	// read after the marker is written: a restart from here on is seen
	ids, err := RunIDs(ctx, c)
	if err != nil && !IsRedisError(err) { // a user refused INFO: no restart check, the marker's stays
		return nil, fmt.Errorf("register run %s: INFO server: %w", runID, err)
	}
	r := &Registration{c: c, marker: MarkerKey(runID), record: RecordKey(runID), value: value, stop: make(chan struct{}), done: make(chan struct{}),
		runIDs: ids, addr: addrOf(c)}
	r.refreshed.Store(time.Now().UnixNano())
	go r.heartbeat(ctx)
	return r, nil
}

func (r *Registration) heartbeat(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(AliveEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := CleanupContext(ctx, AliveEvery)
		// PEXPIRE, not SET: Redis out of memory (noeviction) refuses SET
		// but not PEXPIRE, and a marker that expired for it would read as
		// the run's keys removed by someone else
		ok, err := r.c.PExpire(hctx, r.marker, AliveTTL).Result()
		if err == nil && !ok {
			// someone removed it (and likely the run's keys), or it expired
			// while this process was suspended
			r.missing(hctx) // marked again, retried at the next beat
		} else if err == nil {
			r.refreshed.Store(time.Now().UnixNano())
		}
		cancel()
	}
}

// missing handles the marker found missing (by the heartbeat or the
// environment's check, one at a time): unless it is there again (the other
// marked it), it says whether it was lost (then the run's keys vanished)
// and marks the run again. It returns whether the run's keys vanished.
func (r *Registration) missing(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.vanished.Load() {
		return true
	}
	if n, err := r.c.Exists(ctx, r.marker).Result(); err == nil && n == 1 {
		return false
	}
	if r.lost(ctx) {
		r.vanished.Store(true)
	}
	if r.c.Set(ctx, r.marker, r.value, AliveTTL).Err() == nil {
		r.refreshed.Store(time.Now().UnixNano())
	}
	return r.vanished.Load()
}

// lost reports whether the marker, found missing, was removed by someone
// else rather than expired on its own: it did not expire on its own when
// its TTL was set less than AliveTTL ago, nor when the run's record is gone
// too (FLUSHALL, FLUSHDB or a clean takes both). A marker not refreshed for
// AliveTTL, its record there, expired while this process could not refresh
// it (suspended: Ctrl-Z); `clean` leaves the keys of a suspended run.
func (r *Registration) lost(ctx context.Context) bool {
	if time.Since(time.Unix(0, r.refreshed.Load())) < AliveTTL {
		return true
	}
	n, err := r.c.Exists(ctx, r.record).Result()
	return err != nil || n == 0
}

// Stop ends the refreshing (the marker then expires within AliveTTL unless
// the caller removes it) and waits for it. Safe to call twice; a nil
// Registration does nothing.
func (r *Registration) Stop() {
	if r == nil {
		return
	}
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

// Vanished reports whether the marker was found missing while the run
// lived: someone removed the run's keys (FLUSHALL, UNLINK, an older
// `ratelab clean`) or the Redis lost its data, so the run's figures are
// not to be trusted (lost: a marker that expired while this process was
// suspended is not). A nil Registration reports false.
func (r *Registration) Vanished() bool { return r != nil && r.vanished.Load() }

// Leftover is one run's keys found in a Redis by FindLeftovers:
// measure.Leftover.
type Leftover = measure.Leftover

// CleanConfig says which runs' keys `ratelab clean` lists and removes.
type CleanConfig struct {
	// Run is the one run id to look at; empty means every run.
	Run string
}

// Validate returns a field error ("run") when Run is not a run id (IsRunID).
func (c CleanConfig) Validate() error {
	if c.Run != "" && !IsRunID(c.Run) {
		return field.Errorf("run", "%q is not a ratelab run id (UTC time and 4 hex digits, as in %s)", c.Run, "20261122T030515-cfab")
	}
	return nil
}

// FindLeftovers lists the keys of ratelab's runs in c, grouped by run in
// prefix order: only keys "ratelab:<run id>:..." whose run id has
// NewRunID's form (IsRunID), and only cfg.Run's when set. It only reads
// (SCAN, never KEYS; MEMORY USAGE; GET of the markers and records), so it
// works on a read-only replica and on a Redis out of memory. A run is
// marked Remove when it is not Live and it left a record or is cfg.Run.
func FindLeftovers(ctx context.Context, c redis.UniversalClient, cfg CleanConfig) ([]Leftover, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pattern := runIDGlob
	if cfg.Run != "" {
		pattern = escapeGlob(RunPrefix(cfg.Run)) + "*"
	}
	keys, err := scanMatch(ctx, c, pattern)
	if err != nil {
		return nil, err
	}
	by := map[string][]string{}
	for _, k := range keys {
		id, _, ok := strings.Cut(strings.TrimPrefix(k, KeyPrefix), ":")
		if !ok || !IsRunID(id) {
			continue // not a run's key
		}
		by[id] = append(by[id], k)
	}
	out := make([]Leftover, 0, len(by))
	for id, ks := range by {
		sort.Strings(ks)
		mem, err := MemoryUsage(ctx, c, ks)
		if err != nil {
			return nil, err
		}
		l := Leftover{Prefix: RunPrefix(id), RunID: id, Keys: ks, MemoryBytes: mem}
		if err := checkLeftover(ctx, c, &l); err != nil {
			return nil, err
		}
		// an access check's probe keys have no record: a kill -9 during
		// it left them, and they are ratelab's alone
		l.Remove = !l.Live && (l.Record != nil || id == cfg.Run || accessCheckOnly(l.Prefix, ks))
		out = append(out, l)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Prefix < out[b].Prefix })
	return out, nil
}

// checkLeftover reads l's record and marker and sets Record and Live.
func checkLeftover(ctx context.Context, c redis.UniversalClient, l *Leftover) error {
	var marker, record *redis.StringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		marker = p.Get(ctx, MarkerKey(l.RunID))
		record = p.Get(ctx, RecordKey(l.RunID))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	l.Record, l.Live = nil, false
	for _, cmd := range []*redis.StringCmd{record, marker} {
		var rec RunRecord
		if cmd.Err() == nil && json.Unmarshal([]byte(cmd.Val()), &rec) == nil {
			l.Record = &rec
		}
	}
	switch {
	case marker.Err() == nil:
		l.Live = l.Record == nil || processAlive(l.Record.PID, l.Record.Process)
	case l.Record != nil:
		// the marker expired, but the run's process on this machine is
		// stopped (Ctrl-Z, SIGSTOP): it could not refresh its marker and
		// goes on when resumed
		l.Live = processStopped(l.Record.PID, l.Record.Process)
	}
	return nil
}

// processStopped reports whether identity names a process on this machine
// (same boot, same pid namespace) that still exists and is stopped (state
// T or t in /proc/<pid>/stat). A running process whose marker expired is
// not one: its run stopped refreshing it.
func processStopped(pid int, identity string) bool {
	f := strings.Fields(identity)
	mine := strings.Fields(procIdentity(os.Getpid()))
	if len(f) != 4 || len(mine) != 4 || f[0] != mine[0] || f[1] != mine[1] || f[2] != strconv.Itoa(pid) ||
		procIdentity(pid) != identity {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	state := strings.Fields(string(stat[i+1:]))
	return len(state) > 0 && (state[0] == "T" || state[0] == "t")
}

// RemoveLeftovers removes the keys of the leftovers marked Remove, after
// checking once more that each run is not alive (a run marked alive since
// is skipped and its Remove cleared). It returns how many keys it removed.
func RemoveLeftovers(ctx context.Context, c redis.UniversalClient, ls []Leftover) (int, error) {
	var n int
	for i := range ls {
		l := &ls[i]
		if !l.Remove {
			continue
		}
		hadRecord := l.Record != nil
		if err := checkLeftover(ctx, c, l); err != nil {
			return n, err
		}
		if l.Live || (hadRecord && l.Record == nil) {
			l.Remove = false
			continue
		}
		if err := DeleteKeys(ctx, c, l.Keys); err != nil {
			return n, err
		}
		n += len(l.Keys)
	}
	return n, nil
}

// processAlive says whether the run's process may still be running: false
// only when identity names a process on this machine (same boot, same pid
// namespace) that no longer exists.
func processAlive(pid int, identity string) bool {
	f := strings.Fields(identity)
	mine := strings.Fields(procIdentity(os.Getpid()))
	if len(f) != 4 || len(mine) != 4 || f[0] != mine[0] || f[1] != mine[1] || f[2] != strconv.Itoa(pid) {
		return true // another machine, or not Linux: trust the marker's TTL
	}
	return procIdentity(pid) == identity
}

// procIdentity is "<boot id> <pid namespace> <pid> <start time>" of a
// running process on Linux, "" when there is none (or it is a zombie) or
// /proc cannot tell.
func procIdentity(pid int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return strings.TrimSpace(string(boot)) + " " + ns + " " + strconv.Itoa(pid) + " " + f[19]
}

// GuardUserPrefix begins the name of every ACL user a Guard creates; the
// run id follows ("ratelab-guard-<run id>"), so that a user left by a
// killed run (kill -9 leaves it enabled, with its password) is found and
// removed by `ratelab clean`.
const GuardUserPrefix = "ratelab-guard-"

// GuardUser is an ACL user a run's Guard left on a server.
type GuardUser struct {
	// Name is the ACL user's; RunID the run's that created it.
	Name, RunID string
	// Live: the run still runs (its marker is there and its process is not
	// known to be gone, or its process on this machine runs): the user is
	// left alone.
	Live bool
}

// FindGuardUsers lists the ACL users of ratelab's guards on c (ACL USERS),
// only cfg.Run's when set, each with whether its run is live (as
// FindLeftovers decides it from the run's marker and record). A server
// that will not list its users (a user without ACL permission, a Redis
// Cluster, a Redis before 6) has none to show: nil, nil.
func FindGuardUsers(ctx context.Context, c redis.UniversalClient, cfg CleanConfig) ([]GuardUser, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	one, ok := c.(*redis.Client)
	if !ok {
		return nil, nil
	}
	names, err := one.Do(ctx, "ACL", "USERS").StringSlice()
	if err != nil {
		if IsRedisError(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []GuardUser
	for _, n := range names {
		id, ok := strings.CutPrefix(n, GuardUserPrefix)
		if !ok || !IsRunID(id) || cfg.Run != "" && id != cfg.Run {
			continue
		}
		l := Leftover{RunID: id}
		if err := checkLeftover(ctx, c, &l); err != nil {
			return nil, err
		}
		out = append(out, GuardUser{Name: n, RunID: id, Live: l.Live})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// RemoveGuardUsers removes the users that are not Live (ACL DELUSER),
// after checking each run once more, and returns how many it removed.
func RemoveGuardUsers(ctx context.Context, c redis.UniversalClient, us []GuardUser) (int, error) {
	n := 0
	for i := range us {
		u := &us[i]
		if u.Live {
			continue
		}
		l := Leftover{RunID: u.RunID}
		if err := checkLeftover(ctx, c, &l); err != nil {
			return n, err
		}
		if u.Live = l.Live; u.Live {
			continue
		}
		if err := c.Do(ctx, "ACL", "DELUSER", u.Name).Err(); err != nil {
			return n, fmt.Errorf("ACL DELUSER %s: %w", u.Name, err)
		}
		n++
	}
	return n, nil
}
