package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Calls that wait on a Redis that hangs (SIGSTOP, a full disk, a dead
// link without a reset) end when the command is interrupted (issue 24 item
// 7): go-redis observes a context's deadline but not its cancellation while
// it waits for a reply, so a cancelled call waited up to its read timeout
// (30 s in bench) and Ctrl-C took seconds to minutes. Every client ratelab
// makes is Tracked: its connections are known, and AbortCalls sets their
// deadlines to now, which ends every read and write in flight at once.
// Calls made afterwards still work on a Redis that answers (the cleanup
// after Ctrl-C removes the run's keys), but none of them waits past
// InterruptGrace after the abort: every deadline a tracked connection is
// given is clamped to it, and so is every dial.

// InterruptGrace is how long the work after AbortCalls (Ctrl-C) may wait
// on Redis in all: the removal of the run's keys, the last readings.
const InterruptGrace = 300 * time.Millisecond

var tracked = struct {
	sync.Mutex
	conns map[net.Conn]struct{}
}{conns: map[net.Conn]struct{}{}}

// abortedAt is the last AbortCalls in Unix ns; zero: none.
var abortedAt atomic.Int64

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

// WithGrace returns ctx bounded by GraceDeadline once AbortCalls ran (else
// ctx itself, with a no-op cancel): for waits after Ctrl-C that are not
// calls (a pause between retries, a child process's exit).
func WithGrace(ctx context.Context) (context.Context, context.CancelFunc) {
	if g, ok := GraceDeadline(); ok {
		return context.WithDeadline(ctx, g)
	}
	return ctx, func() {}
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
			// syscall.Conn: keep it (a TLS connection has none, as before)
			return &trackedSysConn{t}, nil
		}
		return t, nil
	}
}

func (trackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (trackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
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
// an outage): not cancelled with ctx, bounded by d and, once AbortCalls
// ran, by GraceDeadline.
func CleanupContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(d)
	if g, ok := GraceDeadline(); ok && g.Before(deadline) {
		deadline = g
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}
