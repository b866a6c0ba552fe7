package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// what a server state leaves in a command's error
// (OOM, READONLY, EOF after CLIENT KILL, EXECABORT, calls failed) is
// explained by the state, read from a real redis-server put in it; other
// errors are left as they are.
func TestExplain(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		state func(c *redis.Client) error // the server's state; nil: none
		err   func(c *redis.Client) error // what the command saw
		want  string                      // in the explained error; "": unchanged
	}{
		{"OOM reply", oom, evalSet, "Redis is out of memory (maxmemory 100000 B reached, policy noeviction)"},
		{"EXECABORT out of memory", oom, func(c *redis.Client) error {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, "ratelab:x", 1, 0); return nil })
			return fmt.Errorf("MEMORY STATS: %w", err)
		}, "Redis is out of memory (maxmemory 100000 B reached"},
		{"READONLY reply", replica, evalSet, "Redis became a read-only replica of 127.0.0.1:1"},
		{"calls failed on a replica", replica, func(*redis.Client) error { return errors.New("3 of 9 calls failed; the first: x") },
			"Redis became a read-only replica"},
		{"killed connection", nil, func(c *redis.Client) error {
			cn := c.Conn()
			defer cn.Close()
			id := cn.ClientID(ctx).Val()
			if err := c.ClientKillByFilter(ctx, "ID", fmt.Sprint(id)).Err(); err != nil {
				return err
			}
			return fmt.Errorf("sliding-log: %w", cn.Ping(ctx).Err())
		}, "the connection was closed by the server (CLIENT KILL"},
		{"a script error on a healthy server", nil, func(c *redis.Client) error { return c.Eval(ctx, "return redis.error_reply('ERR mine')", nil).Err() }, ""},
		{"calls failed on a healthy server", nil, func(*redis.Client) error { return errors.New("3 of 9 calls failed; the first: x") }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rd := redistest.Open(t)
			c := rd.Client.(*redis.Client)
			if tc.state != nil {
				if err := tc.state(c); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.err(c)
			if err == nil {
				t.Fatal("no error to explain")
			}
			got := server.Explain(ctx, c, err)
			switch {
			case tc.want == "" && got != err:
				t.Errorf("%v explained as %v", err, got)
			case tc.want != "" && (!strings.Contains(got.Error(), tc.want) || !strings.Contains(got.Error(), err.Error())):
				t.Errorf("%v explained as %v; want %q first", err, got, tc.want)
			}
			if tc.state != nil {
				_ = c.ConfigSet(ctx, "maxmemory", "0").Err()
				_ = c.Do(ctx, "REPLICAOF", "NO", "ONE").Err()
			}
		})
	}
}

func oom(c *redis.Client) error {
	return c.ConfigSet(context.Background(), "maxmemory", "100000").Err()
}

func replica(c *redis.Client) error {
	return c.Do(context.Background(), "REPLICAOF", "127.0.0.1", "1").Err()
}

func evalSet(c *redis.Client) error {
	return c.Eval(context.Background(), "return redis.call('SET', KEYS[1], 1)", []string{"ratelab:x"}).Err()
}
