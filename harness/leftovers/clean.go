package leftovers

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

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// accessCheckOnly reports whether keys (under prefix) are all CheckAccess's.
func accessCheckOnly(prefix string, keys []string) bool {
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix+server.AccessCheckInfix) {
			return false
		}
	}
	return len(keys) > 0
}

// Leftover is one run's keys found in a Redis by FindLeftovers:
// measure.Leftover.
type Leftover = measure.Leftover

// CleanConfig says which runs' keys `ratelab clean` lists and removes.
type CleanConfig struct {
	// Run is the one run id to look at; empty means every run.
	Run string
}

// Validate returns a field error ("run") when Run is not a run id (server.IsRunID).
func (c CleanConfig) Validate() error {
	if c.Run != "" && !server.IsRunID(c.Run) {
		return field.Errorf("run", "%q is not a ratelab run id (UTC time and 4 hex digits, as in %s)", c.Run, "20261122T030515-cfab")
	}
	return nil
}

// FindLeftovers lists the keys of ratelab's runs in c, grouped by run in
// prefix order: only keys "ratelab:<run id>:..." whose run id has
// NewRunID's form (server.IsRunID), and only cfg.Run's when set. It only reads
// (SCAN, never KEYS; MEMORY USAGE; GET of the markers and records), so it
// works on a read-only replica and on a Redis out of memory. A run is
// marked Remove when it is not Live and it left a record or is cfg.Run.
func FindLeftovers(ctx context.Context, c redis.UniversalClient, cfg CleanConfig) ([]Leftover, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var keys []string
	var err error
	if cfg.Run != "" {
		keys, err = server.ScanKeys(ctx, c, server.RunPrefix(cfg.Run))
	} else {
		keys, err = server.ScanRunKeys(ctx, c)
	}
	if err != nil {
		return nil, err
	}
	by := map[string][]string{}
	for _, k := range keys {
		id, _, ok := strings.Cut(strings.TrimPrefix(k, server.KeyPrefix), ":")
		if !ok || !server.IsRunID(id) {
			continue // not a run's key
		}
		by[id] = append(by[id], k)
	}
	out := make([]Leftover, 0, len(by))
	for id, ks := range by {
		sort.Strings(ks)
		mem, err := server.MemoryUsage(ctx, c, ks)
		if err != nil {
			return nil, err
		}
		l := Leftover{Prefix: server.RunPrefix(id), RunID: id, Keys: ks, MemoryBytes: mem}
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
		if err := server.DeleteKeys(ctx, c, l.Keys); err != nil {
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
		if server.IsRedisError(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []GuardUser
	for _, n := range names {
		id, ok := strings.CutPrefix(n, server.GuardUserPrefix)
		if !ok || !server.IsRunID(id) || cfg.Run != "" && id != cfg.Run {
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
