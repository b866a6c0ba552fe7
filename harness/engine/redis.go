package engine

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/redis/go-redis/v9"
)

// DefaultConnectTimeout bounds how long Open waits for the user's Redis to
// answer (server.DefaultConnectTimeout).
const DefaultConnectTimeout = server.DefaultConnectTimeout

// StartTimeout is the least time Open gives a server it starts itself
// (exec, container, cluster) to come up, whatever the connect timeout: a
// cluster forms in about a second, a container in one or two.
const StartTimeout = 20 * time.Second

// ErrNoRedis is wrapped by Open when no way to get a Redis was found.
var ErrNoRedis = errors.New("no Redis available")

// Options tune OpenWith. The zero value means the defaults.
type Options struct {
	// Timeout bounds how long Open waits for the user's Redis to answer and
	// pass the permission check; zero means DefaultConnectTimeout. Servers
	// ratelab starts get at least StartTimeout.
	Timeout time.Duration
	// Image is the container image of "container"; empty means the
	// RATELAB_REDIS_IMAGE environment variable, else DefaultImage.
	Image string
	// RootCAs are the certificate authorities trusted for rediss:// URLs
	// (see server.LoadCA); nil means the system pool.
	RootCAs *x509.CertPool
	// CAFile, when not empty, is a PEM file of the CA(s) for rediss:// URLs:
	// Check reads it into RootCAs.
	CAFile string
	// AllowEviction is server.Options.AllowEviction, for URLs.
	AllowEviction bool
}

// Check checks o as a user gave them for the Redis of spec, and returns
// them with the CAs of CAFile read into RootCAs. Errors are *field.Error
// naming "connect_timeout" (Timeout must be > 0: a user's zero is a
// mistake, not the default), "redis_image" (Image only for spec
// "container" or "auto") or "redis_ca" (CAFile only for rediss:// URLs, and
// server.LoadCA's errors).
func (o Options) Check(spec string) (Options, error) {
	if o.Timeout <= 0 {
		return o, field.Errorf("connect_timeout", "must be > 0, got %s", o.Timeout)
	}
	if o.Image != "" && spec != "container" && spec != "auto" {
		return o, field.Errorf("redis_image", "only a container Redis uses an image (got Redis %s)", server.RedactURL(spec))
	}
	if o.CAFile != "" {
		if !server.IsTLS(spec) {
			return o, field.Errorf("redis_ca", "only rediss:// URLs use TLS (got %s)", server.RedactURL(spec))
		}
		pool, err := server.LoadCA(o.CAFile)
		if err != nil {
			return o, field.Errorf("redis_ca", "%w", err)
		}
		o.RootCAs = pool
	}
	return o, nil
}

// Open is OpenWith(ctx, spec, Options{Timeout: timeout}).
func Open(ctx context.Context, spec string, timeout time.Duration) (*server.Redis, error) {
	return OpenWith(ctx, spec, Options{Timeout: timeout})
}

// OpenWith connects to the Redis named by spec:
//   - "auto" (or ""): "exec" when redis-server is on PATH, else "container"
//     when a Docker engine answers, else an error wrapping ErrNoRedis that
//     names every way to get a Redis;
//   - "exec": a throwaway redis-server from PATH on a free loopback port
//     (--save "" --appendonly no), stopped by Close;
//   - "container": a throwaway Redis container (testcontainers-go, image
//     o.Image), removed by Close;
//   - "cluster": a throwaway local Redis Cluster of ClusterMasters masters
//     (redis-server from PATH), stopped by Close;
//   - redis://[user:password@]host:port[/db] or rediss://... (TLS): the
//     user's server;
//   - redis+cluster://[user:password@]host:port[,host:port...] or
//     rediss+cluster://... (or go-redis's own redis://host:port?addr=host:port
//     form): the user's Redis Cluster, reached through any of the seeds.
//
// URLs are server.OpenURL's: the user's servers are checked for the
// permissions ratelab needs (server.CheckAccess) before OpenWith returns. Errors name what failed (the
// address, authentication, the TLS handshake, the missing permission) in
// one line, within o.Timeout for the user's servers.
func OpenWith(ctx context.Context, spec string, o Options) (*server.Redis, error) {
	server.QuietLogs()
	if o.Timeout <= 0 {
		o.Timeout = DefaultConnectTimeout
	}
	start := max(o.Timeout, StartTimeout)
	switch {
	case spec == "auto" || spec == "":
		if _, err := exec.LookPath("redis-server"); err == nil {
			return startExec(ctx, start, o.Timeout)
		}
		err := DockerHealthy(ctx, min(o.Timeout, 5*time.Second))
		if err == nil {
			return startContainer(ctx, o.image(), start, o.Timeout)
		}
		return nil, fmt.Errorf("%w: redis-server is not on PATH and Docker does not answer (%v). Get a Redis one of these ways: "+
			"install redis-server (Debian: apt-get install redis-server) for --redis exec; "+
			"start Docker for --redis container; or pass --redis redis://host:port for a server you have", ErrNoRedis, err)
	case spec == "exec":
		return startExec(ctx, start, o.Timeout)
	case spec == "container":
		return startContainer(ctx, o.image(), start, o.Timeout)
	case spec == "cluster":
		return startCluster(ctx, start, o.Timeout)
	case server.IsURL(spec):
		return server.OpenURL(ctx, spec, server.Options{Timeout: o.Timeout, RootCAs: o.RootCAs, AllowEviction: o.AllowEviction})
	}
	return nil, fmt.Errorf("unknown Redis %q: want auto, exec, container, cluster, a redis:// or rediss:// URL, "+
		"or a redis+cluster://host:port,host:port URL", server.RedactURL(spec))
}

// startExec starts a throwaway redis-server (see OpenWith "exec"): it waits
// up to timeout for it to answer; its client dials with dial.
func startExec(ctx context.Context, timeout, dial time.Duration) (*server.Redis, error) {
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
		p, err := spawnRedis(ctx, bin, port, timeout, dial, nil)
		if err == nil {
			return server.New(p.client, measure.RedisInfo{Mode: "exec", Addr: p.addr, Version: p.version}, p.stop), nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// process is a redis-server ratelab started.
type process struct {
	cmd     *exec.Cmd
	addr    string
	client  *redis.Client
	version string
	logTail *strings.Builder
	logMu   sync.Mutex
}

// spawnRedis starts redis-server on 127.0.0.1:port with extra arguments and
// waits until it answers PING (within timeout); its client dials with dial.
func spawnRedis(ctx context.Context, bin string, port int, timeout, dial time.Duration, extra []string) (*process, error) {
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
	p := &process{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), logTail: &strings.Builder{}}
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
	p.client = redis.NewClient(&redis.Options{Addr: p.addr, DialTimeout: dial, MaxRetries: -1, ContextTimeoutEnabled: true})
	server.Track(p.client)
	version, err := server.WaitReady(ctx, p.client, timeout)
	if err != nil {
		_ = p.stop() // SIGTERM then SIGKILL: the server ends; only the client's close can fail
		p.logMu.Lock()
		log := strings.TrimSpace(p.logTail.String())
		p.logMu.Unlock()
		if log != "" {
			err = fmt.Errorf("%w; its log: %s", err, oneLine(log))
		}
		return nil, fmt.Errorf("redis-server on %s did not answer: %w", p.addr, err)
	}
	p.version = version
	return p, nil
}

// stop closes the client and stops the server: SIGTERM, then SIGKILL after 3 s.
func (p *process) stop() error {
	err := p.client.Close()
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
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
	defer func() { _ = l.Close() }() // it accepted nothing: only its port was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}

// envOr returns the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
