package bench

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
)

// redis-benchmark reaches a Redis named by a redis:// or rediss:// URL by
// the URL without its user and password, any other by the address of the
// server ratelab measures; it logs in as the one-time user when there is
// one, never with the URL's password.
func TestRedisBenchmarkConn(t *testing.T) {
	node := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6400", DB: 2}) // never dialled
	defer func() { _ = node.Close() }()
	byAddr := []string{"-h", "127.0.0.1", "-p", "6400", "--dbnum", "2"}
	for _, tc := range []struct {
		name, redisURL string
		want           []string
	}{
		{"URL", "redis://u:p@h:1/2", []string{"-u", "redis://h:1/2"}},
		{"a password with @ : %", "redis://:p%40%3A%25@h:1", []string{"-u", "redis://h:1"}},
		{"TLS URL", "rediss://h:1", []string{"-u", "rediss://h:1"}},
		// a server ratelab started
		{"exec", "exec", byAddr},
		// a cluster's seeds: no URL redis-benchmark takes
		{"cluster URL", "redis+cluster://h:1,h:2", byAddr},
		{"none", "", byAddr},
	} {
		b := &bencher{cfg: Config{RedisURL: tc.redisURL}, nodes: []*redis.Client{node}}
		if got := b.redisBenchmarkConn(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		b.user = &server.TempUser{User: "ratelab-guard-x", Password: "one-time"}
		if got, want := b.redisBenchmarkConn(), append(tc.want, "--user", "ratelab-guard-x", "-a", "one-time"); !slices.Equal(got, want) {
			t.Errorf("%s, one-time user: got %q, want %q", tc.name, got, want)
		}
	}
}
