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

	"github.com/ratelab/ratelab/measure"
	"github.com/redis/go-redis/v9"
)

// DefaultConnectTimeout bounds how long Open waits for a Redis to answer.
const DefaultConnectTimeout = 3 * time.Second

// StartTimeout is the least time Open gives a server it starts itself
// (exec, container, cluster) to come up, whatever the connect timeout: a
// cluster forms in about a second, a container in one or two.
const StartTimeout = 20 * time.Second

// Redis is a connected Redis server or cluster: a throwaway one ratelab
// started, or the user's. Close stops what ratelab started; it never
// touches data it did not write.
type Redis struct {
	// Client is safe for concurrent use: a *redis.Client for one server, a
	// *redis.ClusterClient for a Redis Cluster.
	Client redis.UniversalClient
	Info   measure.RedisInfo
	// stop stops what ratelab started (processes, a container, temporary
	// files); nil for the user's server.
	stop        func() error
	stopOnce    sync.Once
	stopErr     error
	containerID string
}

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
	// (see LoadCA); nil means the system pool.
	RootCAs *x509.CertPool
}

// Open is OpenWith(ctx, spec, Options{Timeout: timeout}).
func Open(ctx context.Context, spec string, timeout time.Duration) (*Redis, error) {
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
// The user's servers are checked for the permissions ratelab needs
// (CheckAccess) before OpenWith returns. Errors name what failed (the
// address, authentication, the TLS handshake, the missing permission) in
// one line, within o.Timeout for the user's servers.
func OpenWith(ctx context.Context, spec string, o Options) (*Redis, error) {
	quietOnce.Do(func() { redis.SetLogger(quietLogger{}) })
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
	case isClusterURL(spec):
		return openClusterURL(ctx, spec, o)
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		return openURL(ctx, spec, o)
	}
	return nil, fmt.Errorf("unknown Redis %q: want auto, exec, container, cluster, a redis:// or rediss:// URL, "+
		"or a redis+cluster://host:port,host:port URL", RedactURL(spec))
}

var quietOnce sync.Once

// quietLogger discards go-redis's own log lines ("failed to dial after 5
// attempts"): Open reports what failed in its error, in one line.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// IsTLS reports whether spec is a URL that uses TLS (rediss:// or rediss+cluster://).
func IsTLS(spec string) bool {
	return strings.HasPrefix(spec, "rediss://") || strings.HasPrefix(spec, "rediss+cluster://")
}

func openURL(ctx context.Context, spec string, o Options) (*Redis, error) {
	r, err := dialURL(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	if err := r.checkAccessWithin(ctx, o.Timeout); err != nil {
		r.Client.Close()
		return nil, err
	}
	return r, nil
}

// dialURL connects to the server of a redis:// or rediss:// URL and waits
// for it to answer, within o.Timeout; it writes nothing. An address that
// refuses connections (or does not resolve) fails at once.
func dialURL(ctx context.Context, spec string, o Options) (*Redis, error) {
	opt, err := redis.ParseURL(spec)
	if err != nil {
		return nil, fmt.Errorf("bad Redis URL %q: %w", RedactURL(spec), err)
	}
	opt.DialTimeout = o.Timeout
	opt.ReadTimeout = o.Timeout
	opt.WriteTimeout = o.Timeout
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true // a per-call deadline (--timeout) bounds each command
	if opt.TLSConfig != nil && o.RootCAs != nil {
		opt.TLSConfig.RootCAs = o.RootCAs
	}
	if err := dialOnce(ctx, opt, o.Timeout); err != nil {
		return nil, connError(opt.Addr, opt.Username, opt.TLSConfig != nil, err)
	}
	c := redis.NewClient(opt)
	r := &Redis{Client: c, Info: measure.RedisInfo{Mode: "url", Addr: opt.Addr}}
	if err := r.ready(ctx, o.Timeout); err != nil {
		c.Close()
		return nil, connError(opt.Addr, opt.Username, opt.TLSConfig != nil, err)
	}
	return r, nil
}

// dialOnce PINGs the server of opt once, without go-redis's dial retries,
// and returns the error only when the address cannot be dialled at all
// (connection refused, no such host, no route): ready would wait out the
// whole timeout on those, as it does for a server that is starting.
func dialOnce(ctx context.Context, opt *redis.Options, timeout time.Duration) error {
	po := *opt
	po.DialerRetries = 1
	po.PoolSize = 1
	c := redis.NewClient(&po)
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.Ping(pctx).Err()
	if isDialError(err) {
		return err
	}
	return nil
}

// isDialError reports an error of dialling: refused, unresolvable, unreachable.
func isDialError(err error) bool {
	if err == nil {
		return false
	}
	var dns *net.DNSError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && !op.Timeout()
}

// checkAccessWithin runs CheckAccess bounded by timeout.
func (r *Redis) checkAccessWithin(ctx context.Context, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return CheckAccess(cctx, r.Client)
}

// connError turns a failure to connect into a one-line error naming what
// failed: authentication, the TLS handshake, or reaching the address.
func connError(addr, user string, tls bool, err error) error {
	s := err.Error()
	who := "the default user"
	if user != "" {
		who = fmt.Sprintf("user %q", user)
	}
	switch {
	case strings.Contains(s, "WRONGPASS") || strings.Contains(s, "NOAUTH") ||
		strings.Contains(s, "invalid password") || strings.Contains(s, "invalid username-password"):
		return fmt.Errorf("authentication as %s failed at %s: %s", who, addr, oneLine(s))
	case strings.Contains(s, "NOPERM"):
		step := "a command"
		if i := strings.Index(s, "run the '"); i >= 0 {
			if j := strings.IndexByte(s[i+9:], '\''); j > 0 {
				step = strings.ToUpper(strings.ReplaceAll(s[i+9:i+9+j], "|", " "))
			}
		}
		return fmt.Errorf("at %s: %w", addr, accessError(step, err))
	case isTLSError(err):
		hint := ""
		var he x509.HostnameError
		var ua x509.UnknownAuthorityError
		switch {
		case errors.As(err, &he):
			hint = " (the server's certificate does not name the host in the URL: connect by a name it lists)"
		case errors.As(err, &ua):
			hint = " (pass --redis-ca FILE with the CA that signed the server's certificate)"
		}
		return fmt.Errorf("TLS handshake with %s failed: %s%s", addr, oneLine(s), hint)
	case !tls && (errors.Is(err, syscall.ECONNRESET) || strings.Contains(s, "EOF")):
		return fmt.Errorf("cannot reach Redis at %s: %s (a TLS-only port? use rediss://)", addr, oneLine(s))
	}
	return fmt.Errorf("cannot reach Redis at %s: %s", addr, oneLine(s))
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// startExec starts a throwaway redis-server (see OpenWith "exec"): it waits
// up to timeout for it to answer; its client dials with dial.
func startExec(ctx context.Context, timeout, dial time.Duration) (*Redis, error) {
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
			r := &Redis{Client: p.client, Info: measure.RedisInfo{Mode: "exec", Addr: p.addr, Version: p.version}, stop: p.stop}
			return r, nil
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
	r := &Redis{Client: p.client}
	if err := r.ready(ctx, timeout); err != nil {
		_ = p.stop()
		p.logMu.Lock()
		log := strings.TrimSpace(p.logTail.String())
		p.logMu.Unlock()
		if log != "" {
			err = fmt.Errorf("%w; its log: %s", err, oneLine(log))
		}
		return nil, fmt.Errorf("redis-server on %s did not answer: %w", p.addr, err)
	}
	p.version = r.Info.Version
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
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	ictx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	info, err := r.Client.Info(ictx, "server").Result()
	if err != nil {
		return err
	}
	if v := InfoFields(info)["redis_version"]; v != "" {
		r.Info.Version = v
	}
	return nil
}

// isTransient reports errors worth retrying while a server starts.
func isTransient(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "LOADING") || strings.Contains(s, "EOF") ||
		strings.Contains(s, "CLUSTERDOWN")
}

// Owned reports whether ratelab started this server (and may do anything to it).
func (r *Redis) Owned() bool { return r.stop != nil }

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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RedactURL hides a password in a Redis URL for messages (redis+cluster://
// URLs with several hosts too).
func RedactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	at := strings.LastIndex(rest, "@")
	if slash := strings.IndexByte(rest, '/'); slash >= 0 && slash < at {
		at = -1
	}
	if at < 0 {
		return s
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return s
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// envOr returns the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
