package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/server"
)

// redisFlags are the flags every command that talks to Redis shares.
// opts holds --connect-timeout, --redis-image, --redis-ca (CAFile) and
// --allow-eviction (addEviction).
type redisFlags struct {
	spec string
	opts engine.Options
}

// addEviction adds --allow-eviction, for the commands that write keys.
func (f *redisFlags) addEviction(c *cobra.Command) {
	c.Flags().BoolVar(&f.opts.AllowEviction, "allow-eviction", false,
		"run on a Redis given by URL that may evict keys to make room (maxmemory with an allkeys-* or volatile-* policy): "+
			"warn instead of refusing (exit 2) when this command may write more than its headroom, and do not stop when it evicts")
}

func (f *redisFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.spec, "redis", "auto",
		"where Redis is: auto (exec when redis-server is on PATH, else container when Docker answers), "+
			"exec (a throwaway redis-server), container (a throwaway Redis container), cluster (a throwaway local 3-master Redis Cluster), "+
			"a redis:// or rediss:// (TLS) URL, [user:password@ for ACL users], "+
			"or a redis+cluster://host:port,host:port URL of your Redis Cluster (rediss+cluster:// for TLS)")
	c.Flags().DurationVar(&f.opts.Timeout, "connect-timeout", engine.DefaultConnectTimeout, "how long to wait for Redis to answer")
	c.Flags().StringVar(&f.opts.Image, "redis-image", "",
		"container image of --redis container (default $"+engine.ImageEnv+", else "+engine.DefaultImage+"; without a registry: make redis-image, then "+engine.LocalImage+")")
	c.Flags().StringVar(&f.opts.CAFile, "redis-ca", "", "PEM file of the CA(s) that signed the server's certificate, for rediss:// URLs (default: the system's CAs)")
}

// open checks the flags (engine.Options.Check) and opens the Redis of
// --redis. The caller closes it.
func (f *redisFlags) open(c *cobra.Command) (*server.Redis, error) {
	redisFromEnv(c, &f.spec) // RATELAB_REDIS, REDIS_URL
	o, err := f.opts.Check(f.spec)
	if err != nil {
		return nil, flagError(nil, err)
	}
	rd, err := engine.OpenWith(c.Context(), f.spec, o)
	if err != nil {
		return nil, usagef("--redis %s: %w", server.RedactURL(f.spec), err)
	}
	rd.AllowEviction = o.AllowEviction // also on the servers ratelab starts
	return rd, nil
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

// redisFromEnv sets spec, --redis, from RATELAB_REDIS or else REDIS_URL
// when the flag was not given, and says on stderr which variable was used
// (its value with any password hidden). The flag wins over both.
func redisFromEnv(c *cobra.Command, spec *string) {
	v, name := engine.FromEnv()
	if c.Flags().Changed("redis") || v == "" || *spec == v { // the flag wins; or said for an earlier target
		return
	}
	*spec = v
	fmt.Fprintf(c.ErrOrStderr(), "ratelab: --redis from $%s: %s\n", name, server.RedactURL(v))
}
