package clientside_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/vclock"
)

var (
	srv *redistest.Server
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// run runs src once on a connection of its own with KEYS keys and ARGV args.
func run(t *testing.T, e *clientside.Exec, src string, keys, args []string) (any, error) {
	t.Helper()
	s, err := clientside.Compile("test", src)
	if err != nil {
		t.Fatal(err)
	}
	if e.Conn == nil {
		conn, closeConn, err := clientside.Dial(ctx, srv.Client(), "x")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = closeConn() })
		e.Conn = conn
	}
	return e.Run(ctx, s, keys, args)
}

// TestReplies: replies reach the script and come back as they do for EVAL.
func TestReplies(t *testing.T) {
	k := srv.Key(t)
	cases := []struct {
		name, src string
		want      any
		err       string
	}{
		{"integer", `return redis.call('INCRBY', KEYS[1], 5)`, int64(5), ""},
		{"bulk string", `redis.call('SET', KEYS[1]..'s', 'abc'); return redis.call('GET', KEYS[1]..'s')`, "abc", ""},
		{"nil is false", `return redis.call('GET', KEYS[1]..'none') == false and 1 or 0`, int64(1), ""},
		{"status is {ok=}", `return redis.call('SET', KEYS[1]..'s', 'x').ok`, "OK", ""},
		{"type is a status", `return redis.call('TYPE', KEYS[1]).ok`, "string", ""},
		{"array", `redis.call('RPUSH', KEYS[1]..'l', 'a', 'b'); return redis.call('LRANGE', KEYS[1]..'l', 0, -1)`, []any{"a", "b"}, ""},
		{"numbers as Redis writes them", `redis.call('SET', KEYS[1]..'n', 1767225600000000); return redis.call('GET', KEYS[1]..'n')`, "1767225600000000", ""},
		{"float truncated", `return 3.7`, int64(3), ""},
		{"table up to nil", `return {1, 'a', nil, 2}`, []any{int64(1), "a"}, ""},
		{"true is 1, false nil", `return {true, false}`, []any{int64(1), nil}, ""},
		{"status reply", `return redis.status_reply('FINE')`, "FINE", ""},
		{"pcall returns the error", `local r = redis.pcall('INCR', KEYS[1]..'s'); return r.err`, "ERR value is not an integer or out of range", ""},
		{"call raises it", `redis.call('INCR', KEYS[1]..'s'); return 1`, nil, "not an integer"},
		{"error reply", `return redis.error_reply('MINE')`, nil, "MINE"},
		{"pipeline", `return redis.pipeline({{'INCRBY', KEYS[1]..'p', 2}, {'INCRBY', KEYS[1]..'p', 3}})`, []any{int64(2), int64(5)}, ""},
		{"transaction", `return redis.transaction({{'INCRBY', KEYS[1]..'t', 2}, {'GET', KEYS[1]..'t'}})`, []any{int64(2), "2"}, ""},
		{"KEYS and ARGV", `return {KEYS[1], ARGV[1], ARGV[2]}`, []any{k, "a", "7"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := run(t, &clientside.Exec{}, c.src, []string{k}, []string{"a", "7"})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v, %v; want %#v", got, err, c.want)
			}
		})
	}
}

// TestWatchAborts: a transaction after a WATCHed key changed (here by
// another connection between the WATCH and the EXEC) is aborted: false.
func TestWatchAborts(t *testing.T) {
	k := srv.Key(t)
	other := srv.Client()
	var e clientside.Exec
	e.Gate = func(_ context.Context, r *clientside.Round) error {
		if r.Kind == clientside.KindTransaction {
			return other.Incr(ctx, k).Err() // another client's write, before our EXEC
		}
		return nil
	}
	got, err := run(t, &e, `
redis.call('WATCH', KEYS[1])
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local r = redis.transaction({{'SET', KEYS[1], n + 10}})
if r == false then return 'aborted' end
return r[1].ok`, []string{k}, nil)
	if err != nil || got != "aborted" {
		t.Fatalf("got %v, %v; want aborted", got, err)
	}
	if v := other.Get(ctx, k).Val(); v != "1" {
		t.Errorf("the key is %q after an aborted EXEC, want the other client's 1", v)
	}
}

// TestExpiryVirtual: TTL commands run on the virtual clock: PEXPIRE sets a
// deadline, PTTL reads it, and the key is gone for a command at or after
// the deadline (and only then), whatever the real clock does.
func TestExpiryVirtual(t *testing.T) {
	k := srv.Key(t)
	var x vclock.Deadlines
	conn, closeConn, err := clientside.Dial(ctx, srv.Client(), k)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	step := func(now int64, src string) any {
		t.Helper()
		got, err := run(t, &clientside.Exec{Conn: conn, Expiry: &x, Now: now}, src, []string{k}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	const t0 = int64(1_767_225_600_000_000)
	if got := step(t0, `redis.call('SET', KEYS[1], 'v'); return redis.call('PEXPIRE', KEYS[1], 60000)`); got != int64(1) {
		t.Fatalf("PEXPIRE = %v, want 1", got)
	}
	if got := step(t0+20e6, `return redis.call('PTTL', KEYS[1])`); got != int64(40000) {
		t.Errorf("PTTL 20 s later = %v, want 40000", got)
	}
	if got := step(t0+60e6-1, `return redis.call('GET', KEYS[1])`); got != "v" {
		t.Errorf("1 µs before the deadline: %v, want v", got)
	}
	if real := srv.Client().PTTL(ctx, k).Val(); real >= 0 {
		t.Errorf("Redis holds a real TTL %s: TTLs must stay virtual", real)
	}
	if got := step(t0+60e6, `return redis.call('GET', KEYS[1])`); got != nil {
		t.Errorf("at the deadline: %v, want nil (expired)", got)
	}
	if got := step(t0+61e6, `return redis.call('TIME')`); !reflect.DeepEqual(got, []any{"1767225661", "0"}) {
		t.Errorf("TIME = %v, want the virtual clock", got)
	}
}

// raceNaive is the check-then-act log of the seeds, sent command by command.
const raceNaive = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - 60000000)
if redis.call('ZCARD', KEYS[1]) >= 2 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 1`

// interleave runs raceNaive once per client (k clients) under p and
// returns the accepted count and the order as "client:command".
func interleave(t *testing.T, k int, p clientside.Policy) (int, []string) {
	t.Helper()
	key := srv.Key(t)
	s, err := clientside.Compile("naive", raceNaive)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make([]int, k)
	rounds, err := clientside.Interleave(ctx, k, p, func(ctx context.Context, c int, gate func(context.Context, *clientside.Round) error) error {
		conn, closeConn, err := clientside.Dial(ctx, srv.Client(), key)
		if err != nil {
			return err
		}
		defer closeConn()
		e := &clientside.Exec{Conn: conn, Client: c, Gate: gate}
		r, err := e.Run(ctx, s, []string{key}, []string{"1767225600000000", fmt.Sprint("m", c)})
		if r == int64(1) {
			accepted[c] = 1
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range rounds {
		order = append(order, fmt.Sprintf("%d:%s", r.Client, r.Commands[0][0]))
	}
	n := 0
	for _, a := range accepted {
		n += a
	}
	return n, order
}

// TestPolicies: reads-first lets every client count before any adds (all
// 4 accepted against a limit of 2); a seeded PCT schedule is the same for
// the same seed.
func TestPolicies(t *testing.T) {
	n, order := interleave(t, 4, clientside.ReadsFirst())
	if n != 4 {
		t.Errorf("reads-first: %d accepted, want all 4 (every client read 0 or 1 before any add): %v", n, order)
	}
	for i, o := range order[:8] {
		if strings.HasSuffix(o, "ZADD") {
			t.Errorf("reads-first: a write at step %d before every read: %v", i, order)
		}
	}
	n, order = interleave(t, 4, clientside.RoundRobin())
	if n != 4 || order[0] != "0:ZREMRANGEBYSCORE" || order[1] != "1:ZREMRANGEBYSCORE" {
		t.Errorf("round-robin: %d accepted, order %v", n, order)
	}
	_, a := interleave(t, 4, clientside.PCT(7, 4, 12, 3))
	_, b := interleave(t, 4, clientside.PCT(7, 4, 12, 3))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("PCT seed 7 twice: %v then %v", a, b)
	}
	found := false
	for seed := int64(0); seed < 8; seed++ {
		if _, c := interleave(t, 4, clientside.PCT(seed, 4, 12, 3)); !reflect.DeepEqual(a, c) {
			found = true
			break
		}
	}
	if !found {
		t.Errorf("PCT: eight seeds gave one schedule")
	}
}

// TestNeverReturns: a script that loops forever stops with its context.
func TestNeverReturns(t *testing.T) {
	s, err := clientside.Compile("loop", `while true do end`)
	if err != nil {
		t.Fatal(err)
	}
	conn, closeConn, err := clientside.Dial(ctx, srv.Client(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if got, err := (&clientside.Exec{Conn: conn}).Run(tctx, s, nil, nil); err == nil {
		t.Fatalf("got %v, want an error once the context is done", got)
	}
}
