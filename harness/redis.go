// Package harness provisions Redis, runs scenario schedules against
// limiters on a clock, and computes the metrics: the exact any-window
// maximum, the ideal oracle, memory per key and latency.
package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultConnectTimeout bounds how long Open waits for a Redis to answer.
const DefaultConnectTimeout = 3 * time.Second

// Redis is a connected Redis server: a throwaway one ratelab started, or the
// user's. Close stops what ratelab started; it never touches data it did
// not write.
type Redis struct {
	// Client is safe for concurrent use.
	Client redis.UniversalClient
	Info   RedisInfo
	cmd    *exec.Cmd
}

// ErrNoRedis is wrapped by Open when no way to get a Redis was found.
var ErrNoRedis = errors.New("no Redis available")

// Open connects to the Redis named by spec:
//   - "auto": like "exec" when redis-server is on PATH, else an error naming
//     the ways to get one;
//   - "exec": start a throwaway redis-server from PATH on a free loopback
//     port (--save "" --appendonly no), stopped by Close;
//   - a redis:// or rediss:// URL: the user's server.
//
// It returns once the server answered PING, or an error naming the address
// within timeout (zero means DefaultConnectTimeout).
func Open(ctx context.Context, spec string, timeout time.Duration) (*Redis, error) {
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	switch {
	case spec == "auto" || spec == "":
		if _, err := exec.LookPath("redis-server"); err != nil {
			return nil, fmt.Errorf("%w: redis-server is not on PATH; install it (Debian: apt-get install redis-server), "+
				"or pass --redis redis://host:port for a server you have", ErrNoRedis)
		}
		return startExec(ctx, timeout)
	case spec == "exec":
		return startExec(ctx, timeout)
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		return openURL(ctx, spec, timeout)
	}
	return nil, fmt.Errorf("unknown Redis %q: want auto, exec, or a redis:// or rediss:// URL", spec)
}

func openURL(ctx context.Context, spec string, timeout time.Duration) (*Redis, error) {
	opt, err := redis.ParseURL(spec)
	if err != nil {
		return nil, fmt.Errorf("bad Redis URL %q: %w", redactURL(spec), err)
	}
	opt.DialTimeout = timeout
	opt.ReadTimeout = timeout
	opt.WriteTimeout = timeout
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	r := &Redis{Client: c, Info: RedisInfo{Mode: "url", Addr: opt.Addr}}
	if err := r.ready(ctx, timeout); err != nil {
		c.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %w", opt.Addr, err)
	}
	return r, nil
}

func startExec(ctx context.Context, timeout time.Duration) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: redis-server is not on PATH (Debian: apt-get install redis-server)", ErrNoRedis)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		r, err := tryExec(ctx, bin, port, timeout)
		if err == nil {
			return r, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func tryExec(ctx context.Context, bin string, port int, timeout time.Duration) (*Redis, error) {
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--daemonize", "no", "--loglevel", "warning", "--logfile", "")
	// the server dies with ratelab, even on kill -9
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	var logTail strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if logTail.Len() < 4096 {
				logTail.WriteString(sc.Text() + "\n")
			}
		}
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: timeout, MaxRetries: -1})
	r := &Redis{Client: c, Info: RedisInfo{Mode: "exec", Addr: addr}, cmd: cmd}
	if err := r.ready(ctx, timeout); err != nil {
		r.Close()
		return nil, fmt.Errorf("redis-server on %s did not answer: %w", addr, err)
	}
	return r, nil
}

// ready waits for PING and reads the server version.
func (r *Redis) ready(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for {
		pctx, cancel := context.WithDeadline(ctx, deadline)
		err = r.Client.Ping(pctx).Err()
		cancel()
		if err == nil {
			break
		}
		if !isTransient(err) || time.Now().Add(20*time.Millisecond).After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, err := r.Client.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			r.Info.Version = v
		}
	}
	return nil
}

// isTransient reports errors worth retrying while a server starts.
func isTransient(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "LOADING") || strings.Contains(s, "EOF")
}

// Owned reports whether ratelab started this server (and may do anything to it).
func (r *Redis) Owned() bool { return r.cmd != nil }

// Close closes the client and stops a server ratelab started. Safe to call twice.
func (r *Redis) Close() error {
	err := r.Client.Close()
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = r.cmd.Process.Kill()
			<-done
		}
		r.cmd = nil
	}
	if errors.Is(err, redis.ErrClosed) {
		return nil
	}
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// redactURL hides a password in a Redis URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}
