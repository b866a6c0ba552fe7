package endpoint_test

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/custom/endpoint"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var ctx = context.Background()

// t0 is the virtual instant tests start at: 2026-01-01T00:00:00Z.
var t0 = time.Unix(1767225600, 0)

// open starts an endpoint for t (closed when t ends) and a first client.
func open(t *testing.T) (*endpoint.Server, *endpoint.Client, *redis.Client) {
	t.Helper()
	s, err := endpoint.Start(ctx, endpoint.Config{Redis: srv.Client(), Prefix: srv.Key(t) + ":ep:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	c, rdb := dial(t, s)
	return s, c, rdb
}

// dial opens a new endpoint client and a go-redis client of it.
func dial(t *testing.T, s *endpoint.Server) (*endpoint.Client, *redis.Client) {
	t.Helper()
	c, err := s.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	c.SetNow(t0)
	opt, err := redis.ParseURL(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return c, rdb
}

// step is one command at a virtual instant and the reply it must get.
type step struct {
	at   time.Duration // after t0
	cmd  []any
	want any // a reply; an error's text; nil for a nil reply
}

// run runs steps in order on rdb through c, "%s" in a command replaced by key.
func run(t *testing.T, c *endpoint.Client, rdb *redis.Client, key string, steps []step) {
	t.Helper()
	for i, s := range steps {
		c.SetNow(t0.Add(s.at))
		args := make([]any, len(s.cmd))
		for j, a := range s.cmd {
			if str, ok := a.(string); ok {
				a = strings.ReplaceAll(str, "%s", key)
			}
			args[j] = a
		}
		got, err := rdb.Do(ctx, args...).Result()
		switch {
		case err == redis.Nil:
			got = nil
		case err != nil:
			got = err.Error()
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("step %d %v at +%v: got %#v, want %#v", i, args, s.at, got, s.want)
		}
	}
}

var sec, ms = time.Second, time.Millisecond

// epochMs is t0 + d in ms since the Unix epoch.
func epochMs(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

func TestExpiryOnTheVirtualClock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		steps []step
	}{
		{"SET EX 60 is there at 59.999 s and at 60 s (Redis expires once now > deadline), gone 1 ms later", []step{
			{0, []any{"SET", "%s", "v", "EX", 60}, "OK"},
			{60*sec - ms, []any{"GET", "%s"}, "v"},
			{60*sec - ms, []any{"PTTL", "%s"}, int64(1)},
			{60 * sec, []any{"PTTL", "%s"}, int64(0)},
			{60*sec + ms, []any{"GET", "%s"}, nil},
			{60*sec + ms, []any{"TTL", "%s"}, int64(-2)},
		}},
		{"EXPIRE, PEXPIRE, TTL rounds as Redis, PERSIST", []step{
			{0, []any{"INCR", "%s"}, int64(1)},
			{0, []any{"TTL", "%s"}, int64(-1)},
			{0, []any{"EXPIRE", "%s", 10}, int64(1)},
			{1500 * ms, []any{"TTL", "%s"}, int64(9)},
			{1499 * ms, []any{"TTL", "%s"}, int64(9)},
			{1400 * ms, []any{"TTL", "%s"}, int64(9)},
			{2 * sec, []any{"PEXPIRE", "%s", 500}, int64(1)},
			{2 * sec, []any{"PTTL", "%s"}, int64(500)},
			{2 * sec, []any{"PERSIST", "%s"}, int64(1)},
			{2 * sec, []any{"PERSIST", "%s"}, int64(0)},
			{time.Hour, []any{"GET", "%s"}, "1"},
			{time.Hour, []any{"EXPIRE", "%s", 0}, int64(1)},
			{time.Hour, []any{"EXISTS", "%s"}, int64(0)},
			{time.Hour, []any{"EXPIRE", "%s", 10}, int64(0)},
		}},
		{"NX, XX, GT, LT", []step{
			{0, []any{"SET", "%s", "v"}, "OK"},
			{0, []any{"EXPIRE", "%s", 10, "XX"}, int64(0)},
			{0, []any{"EXPIRE", "%s", 10, "NX"}, int64(1)},
			{0, []any{"EXPIRE", "%s", 20, "NX"}, int64(0)},
			{0, []any{"EXPIRE", "%s", 5, "GT"}, int64(0)},
			{0, []any{"EXPIRE", "%s", 20, "GT"}, int64(1)},
			{0, []any{"EXPIRE", "%s", 30, "LT"}, int64(0)},
			{0, []any{"EXPIRE", "%s", 15, "LT", "XX"}, int64(1)},
			{0, []any{"TTL", "%s"}, int64(15)},
			{0, []any{"EXPIRE", "%s", 15, "NX", "GT"}, "ERR NX and XX, GT or LT options at the same time are not compatible"},
		}},
		{"EXPIREAT, PEXPIREAT, EXPIRETIME, PEXPIRETIME", []step{
			{0, []any{"SET", "%s", "v"}, "OK"},
			{0, []any{"EXPIREAT", "%s", t0.Unix() + 100}, int64(1)},
			{0, []any{"EXPIRETIME", "%s"}, t0.Unix() + 100},
			{0, []any{"PEXPIREAT", "%s", epochMs(2500 * ms)}, int64(1)},
			{0, []any{"PEXPIRETIME", "%s"}, epochMs(2500 * ms)},
			{0, []any{"EXPIRETIME", "%s"}, t0.Unix() + 3},
			{2500 * ms, []any{"EXISTS", "%s"}, int64(1)},
			{2501 * ms, []any{"EXISTS", "%s"}, int64(0)},
			{3 * sec, []any{"SET", "%s", "v"}, "OK"},
			{3 * sec, []any{"PEXPIREAT", "%s", epochMs(sec)}, int64(1)},
			{3 * sec, []any{"GET", "%s"}, nil},
		}},
		{"SET PX, EXAT, PXAT, KEEPTTL, and SET without them clears the TTL", []step{
			{0, []any{"SET", "%s", "a", "PX", 250}, "OK"},
			{100 * ms, []any{"SET", "%s", "b", "KEEPTTL"}, "OK"},
			{100 * ms, []any{"PTTL", "%s"}, int64(150)},
			{100 * ms, []any{"SET", "%s", "c", "EXAT", t0.Unix() + 7}, "OK"},
			{100 * ms, []any{"PTTL", "%s"}, int64(6900)},
			{100 * ms, []any{"SET", "%s", "d", "PXAT", epochMs(sec), "GET"}, "c"},
			{100 * ms, []any{"PTTL", "%s"}, int64(900)},
			{100 * ms, []any{"SET", "%s", "e", "NX", "EX", 5}, nil},
			{100 * ms, []any{"PTTL", "%s"}, int64(900)},
			{100 * ms, []any{"SET", "%s", "f"}, "OK"},
			{100 * ms, []any{"TTL", "%s"}, int64(-1)},
			{100 * ms, []any{"SET", "%s", "g", "EX", 0}, "ERR invalid expire time in 'set' command"},
		}},
		{"SETEX, PSETEX, GETEX", []step{
			{0, []any{"SETEX", "%s", 2, "a"}, "OK"},
			{sec, []any{"TTL", "%s"}, int64(1)},
			{sec, []any{"PSETEX", "%s", 300, "b"}, "OK"},
			{sec, []any{"GETEX", "%s", "PX", 1000}, "b"},
			{1900 * ms, []any{"PTTL", "%s"}, int64(100)},
			{1900 * ms, []any{"GETEX", "%s", "PERSIST"}, "b"},
			{time.Hour, []any{"GETEX", "%s", "EXAT", t0.Unix() + 4000}, "b"},
			{time.Hour, []any{"TTL", "%s"}, int64(400)},
			{time.Hour, []any{"GETEX", "%s"}, "b"},
			{time.Hour + 400*sec + ms, []any{"GETEX", "%s"}, nil},
			{0, []any{"SETEX", "%s", 0, "a"}, "ERR invalid expire time in 'setex' command"},
		}},
		{"DEL and a list emptied drop the deadline", []step{
			{0, []any{"RPUSH", "%s", "a"}, int64(1)},
			{0, []any{"EXPIRE", "%s", 5}, int64(1)},
			{0, []any{"LPOP", "%s"}, "a"},
			{0, []any{"RPUSH", "%s", "b"}, int64(1)},
			{time.Hour, []any{"LRANGE", "%s", 0, -1}, []any{"b"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c, rdb := open(t)
			run(t, c, rdb, srv.Key(t), tc.steps)
		})
	}
}

func endpointStart(prefix string) (*endpoint.Server, error) {
	return endpoint.Start(ctx, endpoint.Config{Redis: srv.Client(), Prefix: prefix})
}
