package server_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/server"
)

// after AbortCalls (Ctrl-C) nothing waits on Redis past
// InterruptGrace, also a wait whose context was made before the abort: a
// run's heartbeat, begun just before Ctrl-C with a 1 s cleanup context,
// held the command's exit 1 s on a stopped cluster. slack is for a loaded
// machine: the contract is the grace, the margin only absorbs scheduling.
func TestAbortEndsEarlierWaits(t *testing.T) {
	const slack = 400 * time.Millisecond
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip(err)
	}
	port, err := localredis.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := localredis.Spawn(context.Background(), bin, port, 10*time.Second, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = p.Stop()
		}
	}()
	// one connection: the second call waits for its turn, not on a socket
	c := redis.NewClient(&redis.Options{Addr: p.Addr, PoolSize: 1, PoolTimeout: 10 * time.Second, MaxRetries: -1,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	server.Track(c)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Cmd.Process.Signal(syscall.SIGCONT) }()
	defer server.ResetAbort()

	type wait struct {
		name string
		done <-chan struct{}
	}
	var waits []wait
	call := func(name string, ctx context.Context) {
		done := make(chan struct{})
		go func() { _ = c.Ping(ctx).Err(); close(done) }()
		waits = append(waits, wait{name, done})
	}
	cctx, cancel := server.CleanupContext(context.Background(), 10*time.Second)
	defer cancel()
	gctx, gcancel := server.WithGrace(context.Background())
	defer gcancel()
	waits = append(waits, wait{"CleanupContext made before", cctx.Done()}, wait{"WithGrace made before", gctx.Done()})
	call("a call on the stopped server", cctx)
	time.Sleep(100 * time.Millisecond) // it holds the one connection
	call("a call waiting for a connection", cctx)
	time.Sleep(100 * time.Millisecond)

	server.AbortCalls()
	aborted := time.Now()
	actx, acancel := server.CleanupContext(context.Background(), 10*time.Second)
	defer acancel()
	waits = append(waits, wait{"CleanupContext made after", actx.Done()})
	deadline := aborted.Add(server.InterruptGrace + slack)
	for _, w := range waits {
		select {
		case <-w.done:
			continue
		case <-time.After(time.Until(deadline)):
		}
		select {
		case <-w.done:
		default:
			t.Errorf("%s: still waiting %v after AbortCalls (grace %v)", w.name, time.Since(aborted).Round(time.Millisecond), server.InterruptGrace)
		}
	}
	if took := time.Since(aborted); took > server.InterruptGrace+slack {
		t.Errorf("waits ended %v after AbortCalls, want within %v + %v", took.Round(time.Millisecond), server.InterruptGrace, slack)
	}
	// the stopped throwaway server ignores SIGTERM: killed at the grace deadline, not after 3 s
	stopped = true
	_ = p.Stop()
	if took := time.Since(aborted); took > server.InterruptGrace+slack {
		t.Errorf("the stopped redis-server was ended %v after AbortCalls, want within %v + %v", took.Round(time.Millisecond), server.InterruptGrace, slack)
	}
}
