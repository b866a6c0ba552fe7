package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrScriptKilled is wrapped by the error of a call whose script ran longer
// than the call's timeout and was stopped with SCRIPT KILL.
var ErrScriptKilled = errors.New("script ran longer than the call timeout: ratelab sent SCRIPT KILL")

// KillWait bounds SCRIPT KILL: Redis serves no other client while a script
// runs until busy-reply-threshold (5 s by default) has passed, so the kill
// is answered only then.
const KillWait = 10 * time.Second

// IsTimeout reports whether err is a call that timed out (a context
// deadline or a network timeout), as opposed to an answer from Redis.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// KillBusyScript sends SCRIPT KILL to c (every master of a Cluster),
// waiting up to KillWait for the busy server to answer. killed is true when
// a running script was stopped; false with a nil error when none was
// running (NOTBUSY). A script that already wrote cannot be killed
// (UNKILLABLE): that is returned as an error saying so.
func KillBusyScript(ctx context.Context, c redis.UniversalClient) (killed bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), KillWait)
	defer cancel()
	kill := func(ctx context.Context, node *redis.Client) error {
		// a connection of its own that waits as long as the kill may take
		// (the command's client gives up after its read timeout)
		opt := *node.Options()
		opt.ReadTimeout, opt.ContextTimeoutEnabled, opt.PoolSize = KillWait, true, 1
		kc := redis.NewClient(&opt)
		defer func() { _ = kc.Close() }() // one call's client: closing frees its connection, no more
		err := kc.ScriptKill(ctx).Err()
		switch {
		case err == nil:
			killed = true
			return nil
		case strings.HasPrefix(err.Error(), "NOTBUSY"):
			return nil
		case strings.HasPrefix(err.Error(), "UNKILLABLE"):
			return errors.New("a script that already wrote is still running and cannot be killed (UNKILLABLE): only SHUTDOWN NOSAVE stops it")
		}
		return err
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return kill(ctx, node) })
		return killed, err
	}
	node, ok := c.(*redis.Client)
	if !ok {
		return false, errors.New("SCRIPT KILL: not a Redis client")
	}
	return killed, kill(ctx, node)
}

// IsRedisError reports whether err is an error reply from Redis (a script
// error, NOSCRIPT, NOPERM...) rather than a failure to reach it.
func IsRedisError(err error) bool {
	var re redis.Error
	return err != nil && errors.As(err, &re)
}
