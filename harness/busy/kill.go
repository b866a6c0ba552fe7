// Package busy keeps ratelab from leaving a Redis answering BUSY: a
// script of ratelab's still running after its call timed out is stopped
// with SCRIPT KILL, another client's script is left alone, and a script
// that wrote before it looped (which SCRIPT KILL cannot stop) is named.
// Kill tells the cases apart and acts; a Killer does it once per run, in
// the background, and says at the end (Settle) what it found.
package busy

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

// ErrScriptKilled is wrapped by the error of a call whose script ran longer
// than the call's timeout and was stopped with SCRIPT KILL.
var ErrScriptKilled = errors.New("script ran longer than the call timeout: ratelab sent SCRIPT KILL")

// DefaultKillWait bounds SCRIPT KILL when a Config leaves KillWait zero:
// Redis serves no other client while a script runs until
// busy-reply-threshold (5 s by default) has passed, so the kill is
// answered only then.
const DefaultKillWait = 10 * time.Second

// Config holds Kill's timings. The zero Config is the one for a real
// server: DefaultThreshold when the server's cannot be read,
// DefaultKillWait.
type Config struct {
	// Threshold is the server's busy-reply-threshold as the caller read it
	// (Threshold); zero means DefaultThreshold.
	Threshold time.Duration
	// KillWait bounds the probe and the SCRIPT KILL on each node; zero
	// means DefaultKillWait. Kill waits at least Threshold and 2 s more.
	KillWait time.Duration
}

func (c Config) threshold() time.Duration {
	if c.Threshold > 0 {
		return c.Threshold
	}
	return DefaultThreshold
}

func (c Config) wait() time.Duration {
	kw := c.KillWait
	if kw <= 0 {
		kw = DefaultKillWait
	}
	return max(kw, c.threshold()+2*time.Second)
}

// ErrScriptUnkillable is wrapped by the error of a run whose script ran
// longer than the call timeout after it wrote: SCRIPT KILL cannot stop it,
// the server answers BUSY to every client, and only SHUTDOWN NOSAVE (losing
// what was not persisted) recovers it.
var ErrScriptUnkillable = errors.New("the script wrote and then ran on past the call timeout: SCRIPT KILL cannot stop it (UNKILLABLE), Redis answers BUSY to every client, and only SHUTDOWN NOSAVE recovers the server")

// ErrForeignBusy is wrapped by the error of a call that timed out because
// another client's script was already running: ratelab never kills it.
var ErrForeignBusy = errors.New("Redis is busy running another client's script (BUSY): ratelab did not send SCRIPT KILL, as the script is not its own")

// DefaultThreshold is Redis's default busy-reply-threshold, assumed
// when the server's cannot be read.
const DefaultThreshold = 5 * time.Second

// Threshold reads the server's busy-reply-threshold (lua-time-limit
// before Redis 7): how long a script runs before Redis answers BUSY to the
// other clients. known is false, and the threshold DefaultThreshold,
// when CONFIG GET is refused (an ACL user without @admin, a managed Redis)
// or answers nothing usable.
func Threshold(ctx context.Context, c redis.UniversalClient) (threshold time.Duration, known bool) {
	for _, name := range []string{"busy-reply-threshold", "lua-time-limit"} {
		m, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return DefaultThreshold, false
		}
		if v, ok := m[name]; ok {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
				return time.Duration(ms) * time.Millisecond, true
			}
		}
	}
	return DefaultThreshold, false
}

// Found says what Kill found and did.
type Found int

const (
	// NotBusy: no script was running (PING answered, or NOTBUSY).
	NotBusy Found = iota
	// Killed: ratelab's own script was running and SCRIPT KILL stopped it.
	Killed
	// Foreign: another client's script was running; it was left alone.
	Foreign
	// Unkillable: ratelab's own script wrote before it looped; SCRIPT KILL
	// cannot stop it.
	Unkillable
)

// String is the constant's name in lower case ("not busy", "killed",
// "foreign", "unkillable").
func (b Found) String() string {
	switch b {
	case Killed:
		return "killed"
	case Foreign:
		return "foreign"
	case Unkillable:
		return "unkillable"
	}
	return "not busy"
}

// busySlack is how much sooner than sent+threshold a BUSY may come and still
// be the BUSY of a script started by the call sent at sent: Redis answers
// BUSY once the script's elapsed milliseconds reach the threshold, never
// sooner, so only clock rounding is allowed for. Kept small: a foreign
// script started within busySlack after ratelab's call is taken for
// ratelab's (as is one started while that call was on its way).
const busySlack = 2 * time.Millisecond

// Kill is called after a call ratelab sent at sent (local clock) timed
// out, on a server whose busy-reply-threshold is cfg.Threshold. Redis 7
// cannot say which client runs a script (SCRIPT KILL kills any, and no other
// command is served while a script runs), so ratelab tells them apart by
// time: Redis answers BUSY only once a script has run for threshold, so a
// script started by ratelab's call (at or after sent) makes a PING on a new
// connection wait until sent+threshold at least, while a script that was
// already running when the call was sent (another client's) answers BUSY
// sooner. Only in the first case is SCRIPT KILL sent (FUNCTION KILL when
// a function runs). Each node (every
// master of a Cluster) is probed and waited for up to cfg.KillWait (or
// the threshold and 2 s, when longer).
//
// The result is the most telling of the nodes' (Unkillable, then Killed,
// then Foreign); err is a failure to reach a node, or a SCRIPT KILL answered
// with an error other than NOTBUSY and UNKILLABLE. Safe for concurrent use.
func Kill(ctx context.Context, c redis.UniversalClient, sent time.Time, cfg Config) (Found, error) {
	threshold, wait := cfg.threshold(), cfg.wait()
	ctx, cancel := server.CleanupContext(ctx, wait)
	defer cancel()
	var mu sync.Mutex
	found := NotBusy
	note := func(b Found) {
		mu.Lock()
		defer mu.Unlock()
		rank := map[Found]int{NotBusy: 0, Foreign: 1, Killed: 2, Unkillable: 3}
		if rank[b] > rank[found] {
			found = b
		}
	}
	kill := func(ctx context.Context, node *redis.Client) error {
		// a connection of its own that waits as long as the probe and the
		// kill may take (the command's client gives up after its read timeout)
		opt := *node.Options()
		opt.ReadTimeout, opt.ContextTimeoutEnabled, opt.PoolSize = wait, true, 1
		opt.MaxRetries = -1 // a retried PING would hide when BUSY came
		kc := redis.NewClient(&opt)
		server.Track(kc)
		defer func() { _ = kc.Close() }() // one call's client: closing frees its connection, no more
		err := kc.Ping(ctx).Err()
		switch {
		case err == nil:
			return nil // the server answers: no script runs (it ended, or the call was slow)
		case !strings.HasPrefix(err.Error(), "BUSY"):
			return err
		case time.Since(sent) < threshold-busySlack:
			note(Foreign) // it was running before ratelab's call was sent
			return nil
		}
		err = kc.ScriptKill(ctx).Err()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			// a function (FCALL) runs: SCRIPT KILL answers BUSY, measured on
			// Redis 7.0.15 ("You can only call FUNCTION KILL or SHUTDOWN
			// NOSAVE"), and FUNCTION KILL stops it as SCRIPT KILL stops a script
			err = kc.FunctionKill(ctx).Err()
		}
		switch {
		case err == nil:
			note(Killed)
			return nil
		case strings.HasPrefix(err.Error(), "NOTBUSY"):
			return nil
		case strings.HasPrefix(err.Error(), "UNKILLABLE"):
			note(Unkillable)
			return nil
		}
		return err
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return kill(ctx, node) })
		return found, err
	}
	node, ok := c.(*redis.Client)
	if !ok {
		return NotBusy, errors.New("SCRIPT KILL: not a Redis client")
	}
	err = kill(ctx, node)
	return found, err
}

// Err is the error a run reports for what Kill found after a call
// with timeout timed out: one wrapping ErrScriptKilled, ErrScriptUnkillable
// or ErrForeignBusy; nil for NotBusy.
func (b Found) Err(timeout time.Duration) error {
	switch b {
	case Killed:
		return fmt.Errorf("%w (%s)", ErrScriptKilled, timeout)
	case Unkillable:
		return fmt.Errorf("%w (call timeout %s)", ErrScriptUnkillable, timeout)
	case Foreign:
		return fmt.Errorf("%w (ratelab's call timed out after %s)", ErrForeignBusy, timeout)
	}
	return nil
}

// IsReply reports whether err is Redis answering BUSY: a script (whose,
// Redis does not say) has run past busy-reply-threshold.
func IsReply(err error) bool {
	var re redis.Error
	return err != nil && errors.As(err, &re) && strings.HasPrefix(re.Error(), "BUSY ")
}
