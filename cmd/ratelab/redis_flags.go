package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/server"
)

// redisFlags are the flags every command that talks to Redis shares.
type redisFlags struct {
	spec    string
	timeout time.Duration
	image   string
	ca      string
	// allowEviction is --allow-eviction (addEviction): write to a Redis
	// that may evict other keys.
	allowEviction bool
}

// addEviction adds --allow-eviction, for the commands that write keys.
func (f *redisFlags) addEviction(c *cobra.Command) {
	c.Flags().BoolVar(&f.allowEviction, "allow-eviction", false,
		"run on a Redis given by URL that may evict keys to make room (maxmemory with an allkeys-* or volatile-* policy): "+
			"warn instead of refusing (exit 2) when this command may write more than its headroom, and do not stop when it evicts")
}

func (f *redisFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.spec, "redis", "auto",
		"where Redis is: auto (exec when redis-server is on PATH, else container when Docker answers), "+
			"exec (a throwaway redis-server), container (a throwaway Redis container), cluster (a throwaway local 3-master Redis Cluster), "+
			"a redis:// or rediss:// (TLS) URL, [user:password@ for ACL users], "+
			"or a redis+cluster://host:port,host:port URL of your Redis Cluster (rediss+cluster:// for TLS)")
	c.Flags().DurationVar(&f.timeout, "connect-timeout", engine.DefaultConnectTimeout, "how long to wait for Redis to answer")
	c.Flags().StringVar(&f.image, "redis-image", "",
		"container image of --redis container (default $"+engine.ImageEnv+", else "+engine.DefaultImage+"; without a registry: make redis-image, then "+engine.LocalImage+")")
	c.Flags().StringVar(&f.ca, "redis-ca", "", "PEM file of the CA(s) that signed the server's certificate, for rediss:// URLs (default: the system's CAs)")
}

// open checks the flags (options) and opens the Redis of --redis. The
// caller closes it.
func (f *redisFlags) open(c *cobra.Command) (*server.Redis, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	rd, err := engine.OpenWith(c.Context(), f.spec, o)
	if err != nil {
		return nil, usagef("--redis %s: %w", server.RedactURL(f.spec), err)
	}
	rd.AllowEviction = f.allowEviction // also on the servers ratelab starts
	return rd, nil
}

// options checks the flags and returns them as engine.Options (the CAs of
// --redis-ca read). Errors are usage errors naming the flag.
func (f *redisFlags) options() (engine.Options, error) {
	if f.timeout <= 0 {
		return engine.Options{}, usagef("--connect-timeout: must be > 0, got %s", f.timeout)
	}
	o := engine.Options{Timeout: f.timeout, Image: f.image, AllowEviction: f.allowEviction}
	if f.image != "" && f.spec != "container" && f.spec != "auto" {
		return o, usagef("--redis-image: only --redis container uses an image (got --redis %s)", server.RedactURL(f.spec))
	}
	if f.ca != "" {
		if !server.IsTLS(f.spec) {
			return o, usagef("--redis-ca: only rediss:// URLs use TLS (got --redis %s)", server.RedactURL(f.spec))
		}
		pool, err := server.LoadCA(f.ca)
		if err != nil {
			return o, usagef("--redis-ca: %w", err)
		}
		o.RootCAs = pool
	}
	return o, nil
}

// closeRedis closes rd, a command's deferred cleanup: stopping what ratelab
// started can fail (a redis-server that will not stop, a container Docker
// will not remove), and that is said on stderr, since the command's own
// result is decided by then.
func closeRedis(rd *server.Redis, stderr io.Writer) {
	if err := rd.Close(); err != nil {
		fmt.Fprintf(stderr, "ratelab: closing Redis (%s at %s): %v\n", rd.Info.Mode, rd.Info.Addr, err)
	}
}
