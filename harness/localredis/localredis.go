// Package localredis starts throwaway redis-server processes from PATH on
// free loopback ports: the "exec" Redis of ratelab, of its test helper
// (ratelabtest) and of the script probe (harness/guard), and the local
// Redis Cluster of "cluster" (StartCluster, and SweepClusterDirs for the
// directories of killed runs), without Docker. harness/engine builds its
// exec and cluster engines on it; importing it pulls no container client.
package localredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// StartTimeout is the least time ratelab gives a server it starts itself
// to come up, whatever the user's connect timeout (harness/engine's
// StartTimeout, and the script probe's server).
const StartTimeout = 20 * time.Second

// ErrNoServer is wrapped by Start when redis-server is not on PATH.
var ErrNoServer = errors.New("redis-server is not on PATH (Debian: apt-get install redis-server)")

// Start starts a throwaway redis-server from PATH on a free loopback port
// (--save "" --appendonly no, protected mode), waits up to timeout for it
// to answer, and returns it as a *server.Redis of Mode "exec" whose Close
// stops it (SIGTERM, then SIGKILL after 3 s). Its client dials with dial.
// A port taken between choosing and binding is retried twice. The server
// dies with this process, even on kill -9 (Linux: Pdeathsig). Errors wrap
// ErrNoServer, or say why the server did not answer, with its log.
func Start(ctx context.Context, timeout, dial time.Duration) (*server.Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoServer
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p, err := Spawn(ctx, bin, port, timeout, dial, nil)
		if err == nil {
			return server.New(p.Client, measure.RedisInfo{Mode: "exec", Addr: p.Addr, Version: p.Version}, p.Stop), nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// Process is a redis-server started by Spawn.
type Process struct {
	// Cmd is the running process; its Args are the server's arguments.
	Cmd *exec.Cmd
	// Addr is its host:port on the loopback interface.
	Addr string
	// Client talks to it (closed by Stop).
	Client *redis.Client
	// Version is the server's version from INFO.
	Version string
	logTail *strings.Builder
	logMu   sync.Mutex
}

// Spawn starts redis-server bin on 127.0.0.1:port with extra arguments
// and waits until it answers PING (within timeout); its client dials with
// dial. On failure the server is stopped and the error holds its log.
func Spawn(ctx context.Context, bin string, port int, timeout, dial time.Duration, extra []string) (*Process, error) {
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--daemonize", "no", "--loglevel", "warning", "--logfile", ""}, extra...)
	cmd := exec.Command(bin, args...)
	// the server dies with ratelab, even on kill -9
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{Cmd: cmd, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), logTail: &strings.Builder{}}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.logMu.Lock()
			if p.logTail.Len() < 4096 {
				p.logTail.WriteString(sc.Text() + "\n")
			}
			p.logMu.Unlock()
		}
	}()
	p.Client = redis.NewClient(&redis.Options{Addr: p.Addr, DialTimeout: dial, MaxRetries: -1, ContextTimeoutEnabled: true})
	server.Track(p.Client) // an interrupt cuts its calls off too (server.AbortOnCancel)
	deadline := time.Now().Add(timeout)
	version, err := "", waitListening(ctx, p.Addr, deadline, dial)
	if err == nil {
		version, err = server.WaitReady(ctx, p.Client, time.Until(deadline))
	}
	if err != nil {
		_ = p.Stop() // SIGTERM then SIGKILL: the server ends; only the client's close can fail
		p.logMu.Lock()
		log := strings.TrimSpace(p.logTail.String())
		p.logMu.Unlock()
		if log != "" {
			err = fmt.Errorf("%w; its log: %s", err, strings.Join(strings.Fields(log), " "))
		}
		return nil, fmt.Errorf("redis-server on %s did not answer: %w", p.Addr, err)
	}
	p.Version = version
	return p, nil
}

// waitListening waits until the server listens on addr: it dials every
// millisecond (each dial bounded by dial) until a connection is accepted,
// ctx ends or deadline passes, and returns the last dial's error then. The
// client is left alone until the port is open: a refused dial makes
// go-redis wait 100 ms before it dials again (Options.DialerRetryTimeout),
// where redis-server listens ~20 ms after it started.
func waitListening(ctx context.Context, addr string, deadline time.Time, dial time.Duration) error {
	for {
		d := net.Dialer{Timeout: min(dial, max(time.Until(deadline), time.Millisecond))}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close() // a connection the server accepted and never read from
			return nil
		}
		if ctx.Err() != nil || time.Now().Add(time.Millisecond).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// stopAsk bounds the SHUTDOWN NOSAVE Stop sends first.
const stopAsk = 250 * time.Millisecond

// Stop stops the server and closes the client: SHUTDOWN NOSAVE (the
// server ends at once, where a SIGTERM waits for its next cron tick, up to
// 100 ms), then SIGTERM (a server that did not answer within stopAsk), then
// SIGKILL after 3 s or, once the command was interrupted
// (server.AbortCalls), at server.GraceDeadline, without waiting for the
// killed process to go: a throwaway server that hangs (SIGSTOP, a script
// that loops) held Ctrl-C 3 s. Its error is the client's close's.
func (p *Process) Stop() error {
	if p.Cmd.Process != nil {
		ask := stopAsk
		if g, ok := server.GraceDeadline(); ok {
			ask = min(ask, max(time.Until(g), 0))
		}
		ctx, cancel := context.WithTimeout(context.Background(), ask)
		// on a connection of its own: p.Client is closed already when
		// server.Redis.Close stops the server (it closes its client first)
		c := redis.NewClient(&redis.Options{Addr: p.Addr, DialTimeout: ask, MaxRetries: -1, ContextTimeoutEnabled: true})
		_ = c.ShutdownNoSave(ctx).Err() // the server closes the connection: an error either way
		_ = c.Close()                   // closed by the server already
		cancel()
	}
	err := p.Client.Close()
	if p.Cmd.Process != nil {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Cmd.Wait(); close(done) }()
		wait := 3 * time.Second
		if g, ok := server.GraceDeadline(); ok {
			wait = min(wait, max(time.Until(g), 0))
		}
		select {
		case <-done:
		case <-time.After(wait):
			_ = p.Cmd.Process.Kill()
			if _, ok := server.GraceDeadline(); !ok {
				<-done
			} // after Ctrl-C its end is not waited for: SIGKILL cannot fail, and a loaded machine took up to 1 s to reap a large one
		}
	}
	if errors.Is(err, redis.ErrClosed) {
		return nil
	}
	return err
}

// FreePort returns a loopback TCP port free at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }() // it accepted nothing: only its port was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}
