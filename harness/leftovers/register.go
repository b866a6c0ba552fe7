// Package leftovers keeps a killed run's keys from outliving it unnoticed,
// and a live run's keys from being taken: a run registers itself in the
// Redis it writes to (Register: a marker refreshed by a heartbeat, and a
// record), watches that Redis stay the one it started on (EnvCheck), and
// `ratelab clean` lists and removes what runs that are over left behind
// (FindLeftovers, RemoveLeftovers, the guards' ACL users, Run).
//
// A run registers itself with two keys under its own prefix (so an ACL on
// ~ratelab:* covers them):
//
//   - its marker "ratelab:<run id>:~alive", with a TTL of Heartbeat.TTL
//     that the run refreshes every Heartbeat.Every while it lives:
//     `ratelab clean` never removes the keys of a run whose marker is
//     there (unless the run's process is known to be gone, see
//     RunRecord.Process), nor those of a run whose process on this machine
//     is stopped, marker or not (a suspended run cannot refresh it);
//   - its record "ratelab:<run id>:~run", with a TTL of RecordTTL: `ratelab
//     clean` removes only the keys of runs that left a record (or that the
//     user names with --run).
//
// Both hold the RunRecord as JSON and are removed last with the run's keys
// (server.DeleteKeys).
package leftovers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// The marker's timings when a Heartbeat leaves them zero, and the record's
// TTL.
const (
	DefaultTTL   = 5 * time.Second
	DefaultEvery = time.Second
	RecordTTL    = 30 * 24 * time.Hour
)

// Heartbeat is how a registration keeps its marker: TTL is the marker's
// time to live, Every how often the run sets it again. Zero means the
// default (DefaultTTL, DefaultEvery); Every should be well under TTL, or a
// live run's marker lapses between beats. TTL is also how long `ratelab
// clean` leaves a killed run's keys alone when it cannot tell that the
// run's process is gone (another machine).
type Heartbeat struct {
	TTL, Every time.Duration
}

func (h Heartbeat) ttl() time.Duration {
	if h.TTL > 0 {
		return h.TTL
	}
	return DefaultTTL
}

func (h Heartbeat) every() time.Duration {
	if h.Every > 0 {
		return h.Every
	}
	return DefaultEvery
}

// MarkerKey and RecordKey are the keys a run registers under its prefix.
func MarkerKey(runID string) string { return server.RunPrefix(runID) + server.MarkerSuffix }

// RecordKey: see MarkerKey.
func RecordKey(runID string) string { return server.RunPrefix(runID) + server.RecordSuffix }

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
	hb     Heartbeat
}

// Register writes run runID's marker (first) and record (MarkerKey,
// RecordKey) in c and refreshes the marker every hb.Every until Stop or
// until ctx ends (zero hb: every second, for 5 s). Errors: either write
// failed (an unreachable, read-only or out-of-memory Redis, a user without
// SET on ~ratelab:*).
func Register(ctx context.Context, c redis.UniversalClient, runID string, hb Heartbeat) (*Registration, error) {
	rec := RunRecord{RunID: runID, Started: time.Now().UTC(), PID: os.Getpid(), Process: procIdentity(os.Getpid())}
	rec.Host, _ = os.Hostname()
	value, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	// the marker first: a run whose keys a clean can see is already marked alive
	if err := c.Set(ctx, MarkerKey(runID), value, hb.ttl()).Err(); err != nil {
		return nil, fmt.Errorf("register run %s: %w", runID, err)
	}
	if err := c.Set(ctx, RecordKey(runID), value, RecordTTL).Err(); err != nil {
		return nil, fmt.Errorf("register run %s: %w", runID, err)
	}
	// read after the marker is written: a restart from here on is seen
	ids, err := server.RunIDs(ctx, c)
	if err != nil && !server.IsRedisError(err) { // a user refused INFO: no restart check, the marker's stays
		return nil, fmt.Errorf("register run %s: INFO server: %w", runID, err)
	}
	r := &Registration{c: c, marker: MarkerKey(runID), record: RecordKey(runID), value: value, stop: make(chan struct{}), done: make(chan struct{}),
		runIDs: ids, addr: addrOf(c), hb: hb}
	r.refreshed.Store(time.Now().UnixNano())
	go r.heartbeat(ctx)
	return r, nil
}

func (r *Registration) heartbeat(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.hb.every())
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := server.CleanupContext(ctx, r.hb.every())
		// PEXPIRE, not SET: Redis out of memory (noeviction) refuses SET
		// but not PEXPIRE, and a marker that expired for it would read as
		// the run's keys removed by someone else
		ok, err := r.c.PExpire(hctx, r.marker, r.hb.ttl()).Result()
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
	if r.c.Set(ctx, r.marker, r.value, r.hb.ttl()).Err() == nil {
		r.refreshed.Store(time.Now().UnixNano())
	}
	return r.vanished.Load()
}

// lost reports whether the marker, found missing, was removed by someone
// else rather than expired on its own: it did not expire on its own when
// its TTL was set less than the heartbeat's TTL ago, nor when the run's
// record is gone too (FLUSHALL, FLUSHDB or a clean takes both). A marker
// not refreshed for its TTL, its record there, expired while this process could not refresh
// it (suspended: Ctrl-Z); `clean` leaves the keys of a suspended run.
func (r *Registration) lost(ctx context.Context) bool {
	if time.Since(time.Unix(0, r.refreshed.Load())) < r.hb.ttl() {
		return true
	}
	n, err := r.c.Exists(ctx, r.record).Result()
	return err != nil || n == 0
}

// Stop ends the refreshing (the marker then expires within the heartbeat's TTL unless
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
