package main

// The Redis engines from the command line: a throwaway cluster, bad input
// (unreachable cluster seed, wrong password, TLS name mismatch, a missing
// ACL permission) and Ctrl-C with a container.

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// `ratelab run --redis cluster` gives the boundary-burst verdicts of one exec node.
func TestRunOnCluster(t *testing.T) {
	t.Parallel()
	args := []string{"run", "--scenarios", "boundary-burst", "--format", "json"}
	byEngine := map[string]map[string]measure.Row{}
	for _, engine := range []string{"exec", "cluster"} {
		code, stdout, stderr := ratelab(t, append(args, "--redis", engine, "--out", t.TempDir())...)
		if code != exitOK {
			t.Fatalf("--redis %s: exit %d: %s", engine, code, stderr)
		}
		var res measure.Results
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		if res.Redis.Mode != engine {
			t.Errorf("--redis %s: mode %q", engine, res.Redis.Mode)
		}
		byEngine[engine] = map[string]measure.Row{}
		for _, r := range res.Results {
			byEngine[engine][r.Algorithm] = r
		}
	}
	for alg, one := range byEngine["exec"] {
		cl := byEngine["cluster"][alg]
		if cl.Errors != 0 || (cl.Ratio > 1) != (one.Ratio > 1) {
			t.Errorf("%s: ratio %.2f on the cluster, %.2f on one node (errors %d)", alg, cl.Ratio, one.Ratio, cl.Errors)
		}
		if alg != "gcra" && (cl.Accepted != one.Accepted || cl.MaxInWindow != one.MaxInWindow) {
			t.Errorf("%s: accepted %d max %d on the cluster, %d %d on one node", alg, cl.Accepted, cl.MaxInWindow, one.Accepted, one.MaxInWindow)
		}
	}
	if r := byEngine["cluster"]["fixed-window"]; r.MaxInWindow != 100 {
		t.Errorf("fixed-window on the cluster: %d in one window, want 100 (2x)", r.MaxInWindow)
	}
}

// Bad Redis input: exit 2 and one line naming what failed, within the connect timeout.
func TestRedisEngineErrors(t *testing.T) {
	srv := redistest.Start()
	t.Cleanup(func() { srv.Close() })
	tlsSrv, err := redistest.StartTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tlsSrv.Close)
	ctx := context.Background()
	if err := redistest.SetACLUser(ctx, srv.Client(), "ratelab", "s3cret", redistest.Without(server.ACLCommands, "zadd")); err != nil {
		t.Fatal(err)
	}
	addr, port := srv.Info.Addr, strings.TrimPrefix(tlsSrv.Addr(), "127.0.0.1:")
	out := t.TempDir()
	cases := []struct {
		name string
		args []string
		want []string // in the one line of stderr
	}{
		{"unreachable cluster seed", []string{"--redis", "redis+cluster://127.0.0.1:1"},
			[]string{"--redis redis+cluster://127.0.0.1:1: cannot reach Redis Cluster seed 127.0.0.1:1", "connection refused"}},
		{"wrong password", []string{"--redis", "redis://ratelab:wrong@" + addr},
			[]string{"--redis redis://ratelab:xxxxx@" + addr + `: authentication as user "ratelab" failed at ` + addr, "WRONGPASS"}},
		{"TLS name mismatch", []string{"--redis", "rediss://127.0.0.1:" + port, "--redis-ca", tlsSrv.Certs.CAFile},
			[]string{"TLS handshake with 127.0.0.1:" + port + " failed", "127.0.0.1", "does not name the host"}},
		{"TLS without the CA", []string{"--redis", "rediss://localhost:" + port},
			[]string{"TLS handshake with localhost:" + port + " failed", "unknown authority", "--redis-ca"}},
		{"ACL user missing a permission", []string{"--redis", "redis://ratelab:s3cret@" + addr},
			[]string{"the Redis user may not run ZADD", "NOPERM", "grant +zadd"}},
		{"--redis-ca without TLS", []string{"--redis", "redis://" + addr, "--redis-ca", tlsSrv.Certs.CAFile},
			[]string{"--redis-ca: only rediss:// URLs use TLS"}},
		{"--redis-ca not a certificate", []string{"--redis", "rediss://localhost:" + port, "--redis-ca", tlsSrv.Certs.KeyFile},
			[]string{"--redis-ca: ", "holds no PEM certificate"}},
		{"--redis-image without a container", []string{"--redis", "exec", "--redis-image", "redis:7"},
			[]string{"--redis-image: only a container Redis uses an image"}},
	}
	// long enough for a TLS handshake on a loaded 2-core machine
	const timeout = 2 * time.Second
	for _, c := range cases {
		for _, cmd := range []string{"run", "verify"} {
			args := append([]string{cmd, "--connect-timeout", timeout.String()}, c.args...)
			if cmd == "verify" {
				args = append(args, "--algorithm", "sliding-log", "--limit", "10", "--window", "1s")
			} else {
				args = append(args, "--out", out)
			}
			start := time.Now()
			code, _, stderr := ratelab(t, args...)
			took := time.Since(start)
			if code != exitUsage {
				t.Errorf("%s %s: exit %d, want 2; stderr %q", cmd, c.name, code, stderr)
			}
			if lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n"); len(lines) != 1 {
				t.Errorf("%s %s: %d lines on stderr, want one: %q", cmd, c.name, len(lines), stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s %s: stderr %q lacks %q", cmd, c.name, stderr, w)
				}
			}
			if strings.Contains(stderr, "s3cret") || strings.Contains(stderr, ":wrong@") {
				t.Errorf("%s %s: password in stderr: %q", cmd, c.name, stderr)
			}
			if took > timeout+time.Second {
				t.Errorf("%s %s: took %v, connect timeout %v", cmd, c.name, took, timeout)
			}
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
