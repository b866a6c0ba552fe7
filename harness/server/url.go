package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/measure"
)

// Options tune OpenURL and OpenReadOnly. The zero value means the defaults.
type Options struct {
	// Timeout bounds how long OpenURL waits for the user's Redis to answer
	// and pass the permission check; zero means DefaultConnectTimeout.
	Timeout time.Duration
	// RootCAs are the certificate authorities trusted for rediss:// URLs
	// (see LoadCA); nil means the system pool.
	RootCAs *x509.CertPool
	// AllowEviction sets Redis.AllowEviction: the commands may write to a
	// server that may evict keys (BeforeWrite sees it set).
	AllowEviction bool
	// BeforeWrite, when set, is run by OpenURL on the user's server before
	// anything is written to it (its access check writes), within Timeout;
	// its error fails the open. ratelab's commands set evict.CheckOpen, so
	// that a server that evicts with too little headroom is refused before
	// anything lands on it. OpenReadOnly never runs it.
	BeforeWrite func(ctx context.Context, r *Redis) error
}

// IsURL reports whether spec is a URL OpenURL takes: redis://, rediss://,
// redis+cluster:// or rediss+cluster://.
func IsURL(spec string) bool {
	return isClusterURL(spec) || strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://")
}

// OpenURL connects to the user's Redis named by a URL:
//   - redis://[user:password@]host:port[/db] or rediss://... (TLS): a
//     server (Info.Mode "url");
//   - redis+cluster://[user:password@]host:port[,host:port...] or
//     rediss+cluster://... (or go-redis's own redis://host:port?addr=host:port
//     form): a Redis Cluster, reached through any of the seeds
//     (Info.Mode "cluster-url").
//
// The server is checked for the permissions ratelab needs (CheckAccess)
// before OpenURL returns. Errors name what failed (the address,
// authentication, the TLS handshake, the missing permission) in one line,
// within o.Timeout. The Redis is not Owned: Close only closes the client.
func OpenURL(ctx context.Context, spec string, o Options) (*Redis, error) {
	return open(ctx, spec, o, true)
}

// OpenReadOnly connects to the user's Redis (a redis://, rediss://,
// redis+cluster:// or rediss+cluster:// URL) like OpenURL, but without
// CheckAccess, which writes: nothing is written, so a read-only replica or
// a Redis out of memory can still be listed. Errors name the address and
// what failed, within o.Timeout; other specs are refused.
func OpenReadOnly(ctx context.Context, spec string, o Options) (*Redis, error) {
	return open(ctx, spec, o, false)
}

// open dials the server or Cluster of a URL spec and, with check, runs
// CheckAccess (which writes) on it, closing the client when refused.
func open(ctx context.Context, spec string, o Options, check bool) (*Redis, error) {
	QuietLogs()
	if o.Timeout <= 0 {
		o.Timeout = DefaultConnectTimeout
	}
	var r *Redis
	var err error
	switch {
	case isClusterURL(spec):
		r, err = dialClusterURL(ctx, spec, o)
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		r, err = dialURL(ctx, spec, o)
	default:
		return nil, fmt.Errorf("want the URL of a Redis (redis://, rediss://, redis+cluster://), got %q", redact.URL(spec))
	}
	if err != nil || !check {
		return r, err
	}
	if err := r.checkAccessWithin(ctx, o); err != nil {
		_ = r.Client.Close() // the user's server, refused: the access error is the one returned
		return nil, err
	}
	return r, nil
}

// dialClusterURL connects to the user's Redis Cluster through its seeds
// and waits for it to answer, within o.Timeout; it writes nothing.
func dialClusterURL(ctx context.Context, spec string, o Options) (*Redis, error) {
	opt, err := ClusterOptions(spec)
	if err != nil {
		return nil, badURL("bad Redis Cluster URL", spec, err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	if opt.TLSConfig != nil && o.RootCAs != nil {
		opt.TLSConfig.RootCAs = o.RootCAs
	}
	seeds := strings.Join(opt.Addrs, ",")
	if err := probeSeeds(ctx, opt, o.Timeout); err != nil {
		return nil, err
	}
	c := redis.NewClusterClient(opt)
	Track(c)
	version, err := ClusterReady(ctx, c, o.Timeout)
	r := &Redis{Client: c, Info: measure.RedisInfo{Mode: "cluster-url", Addr: seeds, Version: version}}
	if err != nil {
		_ = c.Close() // a client that did not connect: the error returned is why
		if strings.Contains(err.Error(), "NOPERM") {
			return nil, fmt.Errorf("%w (a Redis Cluster also needs +%s)", connError(seeds, opt.Username, opt.TLSConfig != nil, err),
				strings.Join(ACLClusterCommands, " +"))
		}
		return nil, fmt.Errorf("Redis Cluster at %s: %s", seeds, oneLine(err.Error()))
	}
	return r, nil
}

// IsTLS reports whether spec is a URL that uses TLS (rediss:// or rediss+cluster://).
func IsTLS(spec string) bool {
	return strings.HasPrefix(spec, "rediss://") || strings.HasPrefix(spec, "rediss+cluster://")
}

// dialURL connects to the server of a redis:// or rediss:// URL and waits
// for it to answer, within o.Timeout; it writes nothing. An address that
// refuses connections (or does not resolve) fails at once.
func dialURL(ctx context.Context, spec string, o Options) (*Redis, error) {
	opt, err := redis.ParseURL(spec)
	if err != nil {
		return nil, badURL("bad Redis URL", spec, err)
	}
	opt.DialTimeout = o.Timeout
	opt.ReadTimeout = o.Timeout
	opt.WriteTimeout = o.Timeout
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true // a per-call deadline (--timeout) bounds each command
	if opt.TLSConfig != nil && o.RootCAs != nil {
		opt.TLSConfig.RootCAs = o.RootCAs
	}
	// one deadline for the probe and the wait: --connect-timeout bounds both together
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	plain := make(chan bool, 1) // with TLS: does the port answer plain RESP? (a TLS handshake to it just hangs)
	if opt.TLSConfig != nil {
		go func() { plain <- speaksPlainRESP(ctx, opt.Addr) }()
	}
	fail := func(err error) error {
		if errors.Is(ctx.Err(), context.Canceled) { // Ctrl-C, not the connect timeout
			return fmt.Errorf("connect to Redis at %s: %w", opt.Addr, context.Cause(ctx))
		}
		if opt.TLSConfig != nil && ctx.Err() != nil && <-plain {
			return fmt.Errorf("TLS handshake with %s failed: the server answers plain Redis on this port, not TLS (use redis://)", opt.Addr)
		}
		// the socket's own deadline (the same bound) may fire just before
		// the context's: either one is the connect timeout
		var ne net.Error
		if (ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout()) && !isTLSError(err) {
			return fmt.Errorf("cannot reach Redis at %s: no answer within %s (the connect timeout)", opt.Addr, o.Timeout)
		}
		return connError(opt.Addr, opt.Username, opt.TLSConfig != nil, err)
	}
	if err := dialOnce(ctx, opt, o.Timeout); err != nil {
		return nil, fail(err)
	}
	c := redis.NewClient(opt)
	Track(c)
	version, err := WaitReady(ctx, c, o.Timeout)
	if err != nil {
		_ = c.Close() // a client that did not connect: the error returned is why
		return nil, fail(err)
	}
	return &Redis{Client: c, Info: measure.RedisInfo{Mode: "url", Addr: opt.Addr, Version: version}}, nil
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
	Track(c)                         // Ctrl-C ends its wait (an untracked one held Ctrl-C the whole connect timeout)
	defer func() { _ = c.Close() }() // a one-dial probe: its answer is the dial's error
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.Ping(pctx).Err()
	if err != nil && (isDialError(err) || isTLSError(err) || opt.TLSConfig != nil && isClosed(err)) {
		return err // no later try can succeed (a plain server closes a TLS handshake)
	}
	return nil
}

// speaksPlainRESP reports whether addr answers an inline PING in plain
// RESP (+PONG, or an error such as -NOAUTH), before ctx ends.
func speaksPlainRESP(ctx context.Context, addr string) bool {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }() // a probe: nothing to flush
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl) // a failure shows as the read's error
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) }) // Ctrl-C ends the read
	defer stop()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 1)
	n, _ := conn.Read(buf)
	return n == 1 && (buf[0] == '+' || buf[0] == '-')
}

// isClosed reports the peer closing the connection: EOF or a reset.
func isClosed(err error) bool {
	return err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "EOF"))
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

// checkAccessWithin runs CheckAccess bounded by o.Timeout, after
// o.BeforeWrite (the access check writes).
func (r *Redis) checkAccessWithin(ctx context.Context, o Options) error {
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r.AllowEviction = o.AllowEviction
	if o.BeforeWrite != nil {
		if err := o.BeforeWrite(cctx, r); err != nil {
			return err
		}
	}
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
	case tls && (isClosed(err) || strings.Contains(s, "first record does not look like a TLS handshake")):
		return fmt.Errorf("TLS handshake with %s failed: %s (the server does not speak TLS on this port? use redis://)", addr, oneLine(s))
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
	case strings.HasPrefix(s, "BUSY"):
		// another client's script: never ratelab's to kill
		return fmt.Errorf("the Redis at %s is busy running another client's script (it answers BUSY to everyone until the script ends): ratelab leaves it alone and writes nothing; try again when it is done", addr)
	case !tls && (errors.Is(err, syscall.ECONNRESET) || strings.Contains(s, "EOF")):
		return fmt.Errorf("cannot reach Redis at %s: %s (a TLS-only port? use rediss://)", addr, oneLine(s))
	}
	return fmt.Errorf("cannot reach Redis at %s: %s", addr, oneLine(s))
}

// LoadCA reads a PEM file of CA certificates to trust for rediss:// URLs
// (Options.RootCAs). Errors: the file cannot be read, or holds no PEM
// certificate.
func LoadCA(file string) (*x509.CertPool, error) {
	b, err := input.ReadFile(file, input.MaxText)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// isTLSError reports whether err comes from a TLS handshake or certificate check.
func isTLSError(err error) bool {
	var cv *tls.CertificateVerificationError
	var he x509.HostnameError
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var ae tls.AlertError
	if errors.As(err, &cv) || errors.As(err, &he) || errors.As(err, &ua) || errors.As(err, &ci) ||
		errors.As(err, &rh) || errors.As(err, &ae) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "tls: ") || strings.Contains(s, "x509: ")
}

// ClusterReady checks, within timeout, that every master of the cluster
// answers PING and that it reports cluster_state:ok, and returns the
// version of Redis it runs. Errors: a master that does not answer (named
// by address), no master serving slots, a cluster_state other than ok.
func ClusterReady(ctx context.Context, cc *redis.ClusterClient, timeout time.Duration) (version string, err error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc.ReloadState(cctx)
	var mu sync.Mutex
	var masters []string
	err = cc.ForEachMaster(cctx, func(ctx context.Context, node *redis.Client) error {
		if err := node.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		mu.Lock()
		masters = append(masters, node.Options().Addr)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(masters) == 0 {
		return "", fmt.Errorf("the cluster has no master serving slots")
	}
	info, err := cc.ClusterInfo(cctx).Result()
	if err != nil {
		return "", err
	}
	if st := InfoFields(info)["cluster_state"]; st != "ok" {
		return "", fmt.Errorf("cluster_state is %s, not ok (slots unassigned or a master down)", st)
	}
	sinfo, err := cc.Info(cctx, "server").Result()
	if err != nil {
		return "", err
	}
	return InfoFields(sinfo)["redis_version"], nil
}

// isClusterURL reports whether spec names a Redis Cluster: the
// redis+cluster:// and rediss+cluster:// schemes, or go-redis's cluster URL
// (redis://host:port?addr=host:port...).
func isClusterURL(spec string) bool {
	if strings.HasPrefix(spec, "redis+cluster://") || strings.HasPrefix(spec, "rediss+cluster://") {
		return true
	}
	if !strings.HasPrefix(spec, "redis://") && !strings.HasPrefix(spec, "rediss://") {
		return false
	}
	u, err := url.Parse(spec)
	return err == nil && u.Query().Has("addr")
}

// ClusterOptions parses a cluster URL: redis+cluster://[user:password@]
// host:port[,host:port...][?option=value...] (rediss+cluster:// for TLS),
// where the hosts are seeds (any node of the cluster; more seeds survive a
// node being down), or go-redis's own form
// redis://[user:password@]host:port?addr=host:port&addr=host:port. Options
// are go-redis's cluster URL options (dial_timeout, read_timeout, ...).
func ClusterOptions(spec string) (*redis.ClusterOptions, error) {
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return nil, fmt.Errorf("not a URL")
	}
	if base, isCluster := strings.CutSuffix(scheme, "+cluster"); isCluster {
		// userinfo@hosts[/path][?query]
		end := len(rest)
		if i := strings.IndexAny(rest, "/?"); i >= 0 {
			end = i
		}
		authority, tail := rest[:end], rest[end:]
		userinfo := ""
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			userinfo, authority = authority[:at+1], authority[at+1:]
		}
		var hosts []string
		for _, h := range strings.Split(authority, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(h); err != nil {
				return nil, fmt.Errorf("seed %q: want host:port", h)
			}
			hosts = append(hosts, h)
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("no seed address: want %s://host:port[,host:port...]", scheme)
		}
		path, query, _ := strings.Cut(tail, "?")
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, err
		}
		for _, h := range hosts[1:] {
			q.Add("addr", h)
		}
		spec = base + "://" + userinfo + hosts[0] + path
		if len(q) > 0 {
			spec += "?" + q.Encode()
		}
	}
	return redis.ParseClusterURL(spec)
}

// probeSeeds connects to every seed at once (one PING each, within
// timeout) and returns nil when any answers, else the failure of each in
// one line: unreachable, authentication, TLS, or not a cluster node.
func probeSeeds(ctx context.Context, opt *redis.ClusterOptions, timeout time.Duration) error {
	errs := make([]error, len(opt.Addrs))
	var wg sync.WaitGroup
	for i, addr := range opt.Addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{
				Addr: addr, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
				Protocol: opt.Protocol, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
				MaxRetries: -1, DialerRetries: 1,
			})
			Track(c)                         // Ctrl-C ends its wait
			defer func() { _ = c.Close() }() // a one-node probe: its answer is the ping's error
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := c.Ping(pctx).Err()
			if err == nil {
				err = c.ClusterInfo(pctx).Err()
			}
			if err != nil {
				if strings.Contains(err.Error(), "cluster support disabled") {
					errs[i] = fmt.Errorf("%s is not a Redis Cluster node (cluster support disabled): use redis://%s for a single server", addr, addr)
				} else {
					errs[i] = connError(addr, opt.Username, opt.TLSConfig != nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if errors.Is(ctx.Err(), context.Canceled) { // Ctrl-C: not the seeds' fault
		return fmt.Errorf("connect to Redis Cluster at %s: %w", strings.Join(opt.Addrs, ","), context.Cause(ctx))
	}
	var msgs []string
	same := true
	for i, err := range errs {
		if err == nil {
			return nil
		}
		msgs = append(msgs, err.Error())
		if strings.ReplaceAll(msgs[i], opt.Addrs[i], "") != strings.ReplaceAll(msgs[0], opt.Addrs[0], "") {
			same = false
		}
	}
	if same && len(msgs) > 1 && !strings.HasPrefix(msgs[0], "cannot reach") {
		return fmt.Errorf("every Redis Cluster seed (%s) refused: %s", strings.Join(opt.Addrs, ", "), msgs[0])
	}
	if len(msgs) == 1 {
		if m, ok := strings.CutPrefix(msgs[0], "cannot reach Redis at "); ok {
			return fmt.Errorf("cannot reach Redis Cluster seed %s", m)
		}
		return errs[0]
	}
	return fmt.Errorf("no Redis Cluster seed answered: %s", strings.Join(msgs, "; "))
}
