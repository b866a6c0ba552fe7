package engine

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/evict"
	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/internal/redact"
)

// DefaultConnectTimeout bounds how long Open waits for the user's Redis to
// answer (server.DefaultConnectTimeout).
const DefaultConnectTimeout = server.DefaultConnectTimeout

// StartTimeout is the least time Open gives a server it starts itself
// (exec, container, cluster) to come up, whatever the connect timeout: a
// cluster forms in about a second, a container in one or two
// (localredis.StartTimeout).
const StartTimeout = localredis.StartTimeout

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
	// AllowEviction is server.Options.AllowEviction, for URLs; OpenChecked
	// also sets it on the servers ratelab starts.
	AllowEviction bool
	// ReadOnly has OpenChecked open a URL without writing to it
	// (server.OpenReadOnly: no permission check, no eviction check);
	// other specs are refused then.
	ReadOnly bool
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
		return o, field.Errorf("redis_image", "only a container Redis uses an image (got Redis %s)", redact.URL(spec))
	}
	if o.CAFile != "" {
		if !server.IsTLS(spec) {
			return o, field.Errorf("redis_ca", "only rediss:// URLs use TLS (got %s)", redact.URL(spec))
		}
		pool, err := server.LoadCA(o.CAFile)
		if err != nil {
			return o, field.Errorf("redis_ca", "%w", err)
		}
		o.RootCAs = pool
	}
	return o, nil
}

// OpenError is OpenChecked's error when the Redis of Spec could not be
// opened; Err says why. Its text hides any password in Spec
// (server.RedactURL).
type OpenError struct {
	Spec string
	Err  error
}

func (e *OpenError) Error() string { return "redis " + redact.URL(e.Spec) + ": " + e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// OpenChecked opens the Redis of spec as a user gave it with o: o is
// checked first (Check), then the Redis is opened (OpenWith, or
// server.OpenReadOnly with o.ReadOnly) and its AllowEviction set to
// o.AllowEviction. Errors: Check's *field.Error, then an *OpenError. The
// caller closes the Redis. Safe for concurrent use.
func OpenChecked(ctx context.Context, spec string, o Options) (*server.Redis, error) {
	o, err := o.Check(spec)
	if err != nil {
		return nil, err
	}
	var rd *server.Redis
	if o.ReadOnly {
		rd, err = server.OpenReadOnly(ctx, spec, server.Options{Timeout: o.Timeout, RootCAs: o.RootCAs})
	} else {
		rd, err = OpenWith(ctx, spec, o)
	}
	if err != nil {
		return nil, &OpenError{Spec: spec, Err: err}
	}
	rd.AllowEviction = o.AllowEviction
	return rd, nil
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
		return server.OpenURL(ctx, spec, server.Options{Timeout: o.Timeout, RootCAs: o.RootCAs, AllowEviction: o.AllowEviction,
			BeforeWrite: evict.CheckOpen})
	}
	return nil, fmt.Errorf("unknown Redis %q: want auto, exec, container, cluster, a redis:// or rediss:// URL, "+
		"or a redis+cluster://host:port,host:port URL", redact.URL(spec))
}

// startExec starts a throwaway redis-server (see OpenWith "exec";
// localredis.Start): it waits up to timeout for it to answer; its client
// dials with dial.
func startExec(ctx context.Context, timeout, dial time.Duration) (*server.Redis, error) {
	rd, err := localredis.Start(ctx, timeout, dial)
	if errors.Is(err, localredis.ErrNoServer) {
		return nil, fmt.Errorf("%w: %w", ErrNoRedis, err)
	}
	return rd, err
}

// ClusterMasters is the number of masters `--redis cluster` starts
// (localredis.ClusterMasters).
const ClusterMasters = localredis.ClusterMasters

// startCluster starts a throwaway local Redis Cluster (see OpenWith
// "cluster"; localredis.StartCluster): it waits up to timeout for it to
// form; its client dials with dial.
func startCluster(ctx context.Context, timeout, dial time.Duration) (*server.Redis, error) {
	rd, err := localredis.StartCluster(ctx, timeout, dial)
	if errors.Is(err, localredis.ErrNoServer) {
		return nil, fmt.Errorf("%w: the cluster engine starts redis-server from PATH, and it is not there (Debian: apt-get install redis-server)", ErrNoRedis)
	}
	return rd, err
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
