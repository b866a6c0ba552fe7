package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ratelab/ratelab/measure"
	"github.com/redis/go-redis/v9"
)

// DefaultConnectTimeout bounds how long OpenURL waits for a Redis to answer.
const DefaultConnectTimeout = 3 * time.Second

// Redis is a connected Redis server or cluster: a throwaway one ratelab
// started (package harness/engine), or the user's. Close stops what
// ratelab started; it never touches data it did not write.
type Redis struct {
	// Client is safe for concurrent use: a *redis.Client for one server, a
	// *redis.ClusterClient for a Redis Cluster.
	Client redis.UniversalClient
	// Info says how the server was reached (Mode, Addr) and its version.
	Info measure.RedisInfo
	// AllowEviction lets commands write to the user's Redis even when it may
	// evict keys to make room (see package harness/evict); false refuses then.
	AllowEviction bool
	// stop stops what ratelab started (processes, a container, temporary
	// files); nil for the user's server.
	stop     func() error
	stopOnce sync.Once
	stopErr  error
}

// New returns the handle of a Redis reached through c and described by
// info. stop, when not nil, stops what ratelab started for it (processes,
// a container, temporary files): Close calls it once, after closing c, and
// Owned reports true. Pass nil for a server that is the user's.
func New(c redis.UniversalClient, info measure.RedisInfo, stop func() error) *Redis {
	return &Redis{Client: c, Info: info, stop: stop}
}

// Owned reports whether ratelab started this server (and may do anything to it).
func (r *Redis) Owned() bool { return r.stop != nil }

// CloseOrSay is Close for a command's deferred cleanup: stopping what
// ratelab started can fail (a redis-server that will not stop, a container
// Docker will not remove), and that is said on w ("ratelab: closing Redis
// (MODE at ADDR): ..."), since the command's own result is decided by then.
func (r *Redis) CloseOrSay(w io.Writer) {
	if err := r.Close(); err != nil {
		fmt.Fprintf(w, "ratelab: closing Redis (%s at %s): %v\n", r.Info.Mode, r.Info.Addr, err)
	}
}

// Close closes the client and stops what ratelab started: the redis-server
// processes, the container, their temporary files. Safe to call twice and
// from several goroutines; it does not depend on any context, so it also
// cleans up after Ctrl-C.
func (r *Redis) Close() error {
	err := r.Client.Close()
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	if r.stop != nil {
		r.stopOnce.Do(func() { r.stopErr = r.stop() })
		if r.stopErr != nil {
			err = r.stopErr
		}
	}
	return err
}

var quietOnce sync.Once

// QuietLogs discards go-redis's own log lines ("failed to dial after 5
// attempts") for the whole process: ratelab reports what failed in its
// errors, in one line. Safe to call many times.
func QuietLogs() {
	quietOnce.Do(func() { redis.SetLogger(quietLogger{}) })
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// WaitReady waits up to timeout for c to answer PING (retrying while the
// server starts: connection refused, LOADING, CLUSTERDOWN) and returns the
// server's version from INFO (empty when INFO does not say). Errors: the
// last failure when the time is up, or the first one not worth retrying.
func WaitReady(ctx context.Context, c redis.UniversalClient, timeout time.Duration) (version string, err error) {
	deadline := time.Now().Add(timeout)
	// a server just started answers within ~10 ms: asked again after 2 ms,
	// then twice as long each time up to 20 ms
	wait := 2 * time.Millisecond
	for {
		pctx, cancel := context.WithDeadline(ctx, deadline)
		err = c.Ping(pctx).Err()
		cancel()
		if err == nil {
			break
		}
		if !isTransient(err) || time.Now().Add(wait).After(deadline) {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
	ictx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	info, err := c.Info(ictx, "server").Result()
	if err != nil {
		return "", err
	}
	return InfoFields(info)["redis_version"], nil
}

// isTransient reports errors worth retrying while a server starts.
func isTransient(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "LOADING") || strings.Contains(s, "EOF") ||
		strings.Contains(s, "CLUSTERDOWN")
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Started reports whether rd is a server ratelab started itself (engine
// modes exec, container and cluster): a user's script can harm nothing
// there.
func Started(rd *Redis) bool {
	switch rd.Info.Mode {
	case "exec", "container", "cluster":
		return true
	}
	return false
}
