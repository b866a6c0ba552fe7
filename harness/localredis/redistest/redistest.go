// Package redistest starts real, throwaway Redis servers for tests: a
// redis-server from PATH (Start, Open), a local Redis Cluster (StartCluster)
// and a TLS-only server (StartTLS). It pulls no container engine: the
// container image of the container tests is enginetest.Image.
package redistest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/redis/go-redis/v9"
)

// Server is a redis-server started for a test package. Its data is the
// tests' own: Flush may be called freely.
type Server struct {
	*server.Redis
	seq atomic.Int64
}

// Start starts a redis-server from PATH (localredis.Start, as `--redis
// exec`). It exits
// the process with a message when there is none: tests of behaviour need a
// real Redis and are never skipped. Call Close when the package's tests end
// (TestMain).
func Start() *Server {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	server.QuietLogs()
	r, err := localredis.Start(ctx, localredis.StartTimeout, 5*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "redistest: these tests need a real Redis: %v\n(run `make test`, which installs redis-server)\n", err)
		os.Exit(2)
	}
	return &Server{Redis: r}
}

// Open starts a throwaway redis-server (as Start) for test t alone and
// stops it when t and its subtests end: for tests that change the server's
// configuration or fault it, which other tests must not see.
func Open(t testing.TB) *server.Redis {
	t.Helper()
	srv := Start()
	t.Cleanup(func() { _ = srv.Close() })
	return srv.Redis
}

// Key returns a key unique to this test and call, so tests can share the
// server in parallel.
func (s *Server) Key(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("test:%s:%d", t.Name(), s.seq.Add(1))
}

// Client is the server's client.
func (s *Server) Client() *redis.Client { return s.Redis.Client.(*redis.Client) }
