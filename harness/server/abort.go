package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Calls that wait on a Redis that hangs (SIGSTOP, a full disk, a dead
// link without a reset) end when the command is interrupted: go-redis observes a context's deadline but not its cancellation while
// it waits for a reply, so a cancelled call waited up to its read timeout
// (30 s in bench) and Ctrl-C took seconds to minutes. Every client ratelab
// makes is Tracked: its connections are known, and AbortCalls sets their
// deadlines to now, which ends every read and write in flight at once.
// Calls made afterwards still work on a Redis that answers (the cleanup
// after Ctrl-C removes the run's keys), but none of them waits past
// InterruptGrace after the abort: every deadline a tracked connection is
// given is clamped to it, and so is every dial. A wait that began before
// the abort and is not a read or write (a dial under way, a turn in the
// connection pool, a heartbeat's cleanup context) ends at the same
// instant: CleanupContext and WithGrace contexts end then (graceOver).

// InterruptGrace is how long the work after AbortCalls (Ctrl-C) may wait
// on Redis in all: the removal of the run's keys, the last readings.
const InterruptGrace = 300 * time.Millisecond

var tracked = struct {
	sync.Mutex
	conns map[net.Conn]struct{}
}{conns: map[net.Conn]struct{}{}}

// abortedAt is the last AbortCalls in Unix ns; zero: none.
var abortedAt atomic.Int64

// graceOver's ctx is cancelled InterruptGrace after AbortCalls: it ends
// the CleanupContext and WithGrace contexts made before the abort, whose
// deadlines the abort could not shorten (a heartbeat's SET waiting for a
// pool connection to a stopped Redis held Ctrl-C 1 s). An AbortCalls after
// it was cancelled arms a fresh one.
var graceOver struct {
	sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	armed  bool
}

func init() { graceOver.ctx, graceOver.cancel = context.WithCancel(context.Background()) }

// armGrace starts graceOver's countdown at an abort (a fresh one when the
// last has run out).
func armGrace() {
	graceOver.Lock()
	defer graceOver.Unlock()
	if graceOver.armed && graceOver.ctx.Err() != nil {
		graceOver.ctx, graceOver.cancel = context.WithCancel(context.Background())
		graceOver.armed = false
	}
	if !graceOver.armed {
		graceOver.armed = true
		time.AfterFunc(InterruptGrace, graceOver.cancel)
	}
}

// errGraceOver is the cause of a context graceOver ended.
var errGraceOver = errors.New("interrupted: Redis not waited for past the grace")

// untilGrace returns ctx also ended InterruptGrace after an AbortCalls,
// whether that came before or comes after this call.
func untilGrace(ctx context.Context) (context.Context, context.CancelFunc) {
	graceOver.Lock()
	g := graceOver.ctx
	graceOver.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(g, func() { cancel(errGraceOver) })
	return ctx, func() { stop(); cancel(nil) }
}

// Track makes c's connections abortable by AbortCalls. Call it right after
// creating c, before its first command (connections dialled earlier are not
// seen). A *redis.ClusterClient's node clients are tracked as they are made.
// Safe for concurrent use; c may be nil.
func Track(c redis.UniversalClient) {
	switch c := c.(type) {
	case *redis.Client:
		c.AddHook(trackHook{})
	case *redis.ClusterClient:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(trackHook{}) })
	}
}

// AbortCalls ends every call of a Tracked client waiting on Redis now (it
// fails with an i/o timeout) and returns how many connections it touched.
// Safe for concurrent use.
func AbortCalls() int {
	tracked.Lock()
	defer tracked.Unlock()
	now := time.Now()
	abortedAt.Store(now.UnixNano())
	armGrace()
	for c := range tracked.conns {
		_ = c.(*trackedConn).Conn.SetDeadline(now) // a closed connection has nothing to end
	}
	return len(tracked.conns)
}

// AbortOnCancel calls AbortCalls when ctx ends, until stop is called (stop
// reports whether it came first). A command line calls it with its
// interrupt context, and stop before it cancels that context itself.
func AbortOnCancel(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() { AbortCalls() })
}

// Aborted returns the time of the last AbortCalls, zero when none.
func Aborted() time.Time {
	if ns := abortedAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// GraceDeadline is the instant after which no call waits on Redis once
// AbortCalls ran (Aborted + InterruptGrace); ok is false before any.
func GraceDeadline() (deadline time.Time, ok bool) {
	a := Aborted()
	if a.IsZero() {
		return time.Time{}, false
	}
	return a.Add(InterruptGrace), true
}

// clamp is deadline t (zero: none) bounded by GraceDeadline.
func clamp(t time.Time) time.Time {
	if g, ok := GraceDeadline(); ok && (t.IsZero() || t.After(g)) {
		return g
	}
	return t
}

// WithGrace returns ctx bounded by GraceDeadline once AbortCalls ran, or
// ended at it when AbortCalls runs later: for waits after Ctrl-C that are
// not calls (a pause between retries, a child process's exit, a dial).
func WithGrace(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := untilGrace(ctx)
	if g, ok := GraceDeadline(); ok {
		dctx, dcancel := context.WithDeadline(ctx, g)
		return dctx, func() { dcancel(); cancel() }
	}
	return ctx, cancel
}

// trackHook is the go-redis hook that registers each dialled connection.
type trackHook struct{}

func (trackHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := WithGrace(ctx)
		defer cancel()
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		t := &trackedConn{Conn: c}
		tracked.Lock()
		tracked.conns[t] = struct{}{}
		tracked.Unlock()
		if _, ok := c.(syscall.Conn); ok {
			// go-redis's pool health check peeks at the socket through
			// syscall.Conn: keep it (a TLS connection has none)
			return &trackedSysConn{t}, nil
		}
		return t, nil
	}
}

// The hook also sends again a command that only reads or whose second run
// changes nothing (retrySafe: INFO, SCAN, UNLINK, SCRIPT LOAD, ...) when
// the server closed its connection (IsClosed: CLIENT KILL, its timeout
// setting): the client takes another connection or dials a new one. It
// tries up to closedRetries times, waiting closedRetryWait, then twice as
// long each time (1.55 s in all): a pool's idle connections all die in one
// CLIENT KILL, and a kill repeated while a retry is under way closes its
// new connection too (a CI run: bench ended "sliding-log allow path: EOF"
// after the first retry). Decisions (EVALSHA, EVAL) and anything else are
// never resent: a call the server ran before it closed the connection
// would run twice.
func (trackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		for try := 0; try < closedRetries && IsClosed(err) && retrySafe(cmd) && ctx.Err() == nil; try++ {
			if !closedPause(ctx, try) {
				break
			}
			cmd.SetErr(nil)
			err = next(ctx, cmd)
		}
		return err
	}
}

func (trackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !IsClosed(err) || len(cmds) == 0 {
			return err
		}
		for _, c := range cmds {
			if !retrySafe(c) {
				return err
			}
		}
		for try := 0; try < closedRetries && IsClosed(err) && ctx.Err() == nil; try++ {
			var again []redis.Cmder
			for _, c := range cmds {
				if IsClosed(c.Err()) {
					c.SetErr(nil)
					again = append(again, c)
				}
			}
			if len(again) == 0 || !closedPause(ctx, try) {
				return err
			}
			err = next(ctx, again)
		}
		return err
	}
}

// closedRetries and closedRetryWait bound how a retrySafe command is sent
// again after the server closed its connection (trackHook): at most
// closedRetries more times, the first after closedRetryWait, each wait
// twice the one before.
const (
	closedRetries   = 5
	closedRetryWait = 50 * time.Millisecond
)

// closedPause waits before retry try (0 first) of a command whose
// connection was closed; false when ctx ended first.
func closedPause(ctx context.Context, try int) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(closedRetryWait << try):
		return true
	}
}

// retrySafe reports whether cmd may be sent again after its connection
// was closed without a reply: it only reads, or a second run leaves the
// server as the first did.
func retrySafe(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "ping", "info", "scan", "exists", "pttl", "ttl", "pexpiretime", "type", "memory", "dbsize",
		"get", "hgetall", "zcard", "time", "unlink", "del", "pexpire":
		return true
	case "script", "config":
		args := cmd.Args()
		if len(args) < 2 {
			return false
		}
		sub, _ := args[1].(string)
		sub = strings.ToLower(sub)
		return sub == "load" || sub == "get" || sub == "exists"
	}
	return false
}

// trackedConn is a connection AbortCalls can reach; Close forgets it.
type trackedConn struct {
	net.Conn
}

func (c *trackedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(clamp(t)) }
func (c *trackedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(clamp(t)) }
func (c *trackedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(clamp(t)) }

func (c *trackedConn) Close() error {
	tracked.Lock()
	delete(tracked.conns, c)
	tracked.Unlock()
	return c.Conn.Close()
}

// trackedSysConn is a trackedConn over a connection with a file descriptor.
type trackedSysConn struct{ *trackedConn }

func (c *trackedSysConn) SyscallConn() (syscall.RawConn, error) {
	s, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return s.SyscallConn()
}

// CleanupContext is a context for work after ctx may have ended (Ctrl-C,
// an outage): not cancelled with ctx, bounded by d and by GraceDeadline of
// an AbortCalls made before or after it.
func CleanupContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(d)
	if g, ok := GraceDeadline(); ok && g.Before(deadline) {
		deadline = g
	}
	dctx, dcancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	ctx, cancel := untilGrace(dctx)
	return ctx, func() { cancel(); dcancel() }
}
