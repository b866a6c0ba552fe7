package endpoint_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/custom/clientside"
)

func TestTimeIsTheClientsInstant(t *testing.T) {
	t.Parallel()
	s, c, rdb := open(t)
	c.SetNow(t0.Add(1500*time.Millisecond + 7*time.Microsecond))
	got, err := rdb.Time(ctx).Result()
	if err != nil || !got.Equal(t0.Add(1500*time.Millisecond+7*time.Microsecond)) {
		t.Errorf("TIME: got %v, %v; want t0+1.500007s", got, err)
	}
	// another client keeps its own instant
	c2, rdb2 := dial(t, s)
	c2.SetNow(t0.Add(time.Hour))
	if got, _ := rdb2.Time(ctx).Result(); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("second client's TIME: got %v, want t0+1h", got)
	}
}

// pttlScript reads a key's PTTL and the clock inside a script.
const pttlScript = `local t = redis.call('TIME')
return {redis.call('PTTL', KEYS[1]), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}`

func TestScripts(t *testing.T) {
	t.Parallel()
	s, c, rdb := open(t)
	key := srv.Key(t)
	// a TTL set by a plain command, read by a script, on the same clock
	if err := rdb.SetEx(ctx, key, "v", 60*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	c.SetNow(t0.Add(20 * time.Second))
	got, err := rdb.Eval(ctx, pttlScript, []string{key}).Result()
	if want := []any{int64(40000), epochMs(20 * time.Second)}; err != nil || !slices.Equal(got.([]any), want) {
		t.Errorf("EVAL: got %v, %v; want %v", got, err, want)
	}
	// a TTL set inside a script, read by a plain command
	c.SetNow(t0)
	if err := rdb.Eval(ctx, "return redis.call('SET', KEYS[1], 'x', 'PX', ARGV[1])", []string{key + ":s"}, 1500).Err(); err != redis.Nil && err != nil {
		t.Fatal(err)
	}
	if got, _ := rdb.PTTL(ctx, key+":s").Result(); got != 1500*time.Millisecond {
		t.Errorf("PTTL of a key set in a script: got %v, want 1.5s", got)
	}
	// EVALSHA of a script never loaded: NOSCRIPT, and go-redis's Script.Run
	// falls back to EVAL, after which EVALSHA works
	sc := redis.NewScript("return redis.call('INCR', KEYS[1])")
	if err := rdb.EvalSha(ctx, sc.Hash(), []string{key + ":n"}).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Errorf("EVALSHA never loaded: got %v, want NOSCRIPT", err)
	}
	if n, err := sc.Run(ctx, rdb, []string{key + ":n"}).Int(); n != 1 || err != nil {
		t.Errorf("Script.Run: got %d, %v; want 1", n, err)
	}
	if n, err := rdb.EvalSha(ctx, sc.Hash(), []string{key + ":n"}).Int(); n != 2 || err != nil {
		t.Errorf("EVALSHA after EVAL: got %d, %v; want 2", n, err)
	}
	// SCRIPT LOAD answers the original SHA; SCRIPT EXISTS knows it, and so
	// does another client (scripts are the server's, as on Redis)
	sha, err := rdb.ScriptLoad(ctx, pttlScript).Result()
	if err != nil || sha != redis.NewScript(pttlScript).Hash() {
		t.Errorf("SCRIPT LOAD: got %q, %v; want the script's SHA1", sha, err)
	}
	_, rdb2 := dial(t, s)
	if ex, err := rdb2.ScriptExists(ctx, sha, strings.Repeat("0", 40)).Result(); err != nil || !slices.Equal(ex, []bool{true, false}) {
		t.Errorf("SCRIPT EXISTS: got %v, %v", ex, err)
	}
	// a script's error reaches the client as Redis words it
	if err := rdb.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{key}).Err(); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Errorf("script error: got %v", err)
	}
	// a function library is refused
	if err := rdb.Eval(ctx, "#!lua name=lib\nreturn 1", nil).Err(); err == nil || !strings.Contains(err.Error(), "function library") {
		t.Errorf("function library: got %v", err)
	}
}

func TestTransactionsAndPipelines(t *testing.T) {
	t.Parallel()
	s, c, rdb := open(t)
	key := srv.Key(t)
	// MULTI ... EXEC: SET EX and TTL queued, on the virtual clock
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, 1, 30*time.Second)
		p.Incr(ctx, key)
		p.TTL(ctx, key)
		return nil
	})
	if err != nil || cmds[1].(*redis.IntCmd).Val() != 2 || cmds[2].(*redis.DurationCmd).Val() != 30*time.Second {
		t.Errorf("MULTI/EXEC: %v, %v", cmds, err)
	}
	// a pipeline
	c.SetNow(t0.Add(10 * time.Second))
	cmds, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, key)
		p.PTTL(ctx, key)
		return nil
	})
	if err != nil || cmds[0].(*redis.StringCmd).Val() != "2" || cmds[1].(*redis.DurationCmd).Val() != 20*time.Second {
		t.Errorf("pipeline: %v, %v", cmds, err)
	}
	// WATCH: a write of another client between WATCH and EXEC aborts EXEC;
	// the client's own reads do not
	_, other := dial(t, s)
	watch := func(between func()) error {
		return rdb.Watch(ctx, func(tx *redis.Tx) error {
			n, err := tx.Get(ctx, key).Int()
			if err != nil {
				return err
			}
			if _, err := tx.TTL(ctx, key).Result(); err != nil {
				return err
			}
			between()
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, n+1, redis.KeepTTL)
				return nil
			})
			return err
		}, key)
	}
	if err := watch(func() {}); err != nil {
		t.Errorf("WATCH, own reads, EXEC: %v", err)
	}
	if err := watch(func() { other.Incr(ctx, key) }); !errors.Is(err, redis.TxFailedErr) {
		t.Errorf("WATCH, another client's INCR, EXEC: got %v, want %v", err, redis.TxFailedErr)
	}
	// a refused command inside MULTI makes EXEC discard the transaction
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, key)
		p.Do(ctx, "BLPOP", key+":l", 0)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "EXECABORT") {
		t.Errorf("refused command in MULTI: got %v, want EXECABORT", err)
	}
	if got, _ := rdb.Get(ctx, key).Result(); got != "4" {
		t.Errorf("after EXECABORT: got %q, want 4 (unchanged)", got)
	}
}

func TestRefused(t *testing.T) {
	t.Parallel()
	_, _, rdb := open(t)
	cases := []struct {
		cmd  []any
		want string // in the error
	}{
		{[]any{"BLPOP", "k", 0}, "BLPOP is refused: it blocks"},
		{[]any{"WAIT", 1, 0}, "WAIT is refused"},
		{[]any{"OBJECT", "FREQ", "k"}, "OBJECT FREQ is refused"},
		{[]any{"OBJECT", "IDLETIME", "k"}, "OBJECT IDLETIME is refused"},
		{[]any{"DEBUG", "SLEEP", 0}, "DEBUG"},
		{[]any{"SUBSCRIBE", "ch"}, "SUBSCRIBE"},
		{[]any{"FCALL", "f", 0}, "FCALL is refused"},
		{[]any{"FUNCTION", "LIST"}, "FUNCTION"},
		{[]any{"CONFIG", "SET", "maxmemory", "1"}, "CONFIG"},
		{[]any{"FLUSHALL"}, "FLUSHALL"},
		{[]any{"KEYS", "*"}, "KEYS"},
		{[]any{"SCAN", 0}, "SCAN"},
		{[]any{"DBSIZE"}, "DBSIZE is refused"},
		{[]any{"XREAD", "BLOCK", 0, "STREAMS", "s", "$"}, "XREAD is refused"},
		{[]any{"SELECT", 1}, "SELECT 1 is refused"},
		{[]any{"SCRIPT", "FLUSH"}, "SCRIPT FLUSH is refused"},
		{[]any{"CLIENT", "KILL", "ID", 1}, "CLIENT KILL is refused"},
		{[]any{"NOSUCH", "a"}, "unknown command 'NOSUCH'"},
		{[]any{"GET"}, "wrong number of arguments for 'get' command"},
	}
	for _, tc := range cases {
		err := rdb.Do(ctx, tc.cmd...).Err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.cmd, err, tc.want)
		}
	}
	// what a client library sends on connecting is answered
	for _, cmd := range [][]any{{"PING"}, {"ECHO", "x"}, {"SELECT", 0}, {"CLIENT", "SETNAME", "me"},
		{"CLIENT", "SETINFO", "LIB-NAME", "x"}, {"HELLO", 2}} {
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			t.Errorf("%v: %v", cmd, err)
		}
	}
	if err := rdb.Do(ctx, "HELLO", 3).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPROTO") {
		t.Errorf("HELLO 3: got %v, want NOPROTO", err)
	}
	if got, _ := rdb.Do(ctx, "CLIENT", "GETNAME").Text(); got != "me" {
		t.Errorf("CLIENT GETNAME: got %q", got)
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	prefix := srv.Key(t) + ":ep:"
	s, err := endpointStart(prefix)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	c.SetNow(t0)
	rdb := redis.NewClient(&redis.Options{Addr: c.Addr(), MaxRetries: -1})
	defer rdb.Close()
	// keys of any name, by a plain command, a script and a transaction
	names := []string{"lib:" + prefix + "a", "other:" + prefix + "b", "x" + prefix + "c"}
	rdb.Set(ctx, names[0], 1, time.Minute)
	rdb.Eval(ctx, "redis.call('ZADD', KEYS[1], 1, 'm') return 1", []string{names[1]})
	rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { p.HSet(ctx, names[2], "f", 1); return nil })
	rdb.Get(ctx, "read:"+prefix) // read only: not a written key
	if got := s.Keys(); !slices.Equal(got, []string{names[0], names[1], names[2]}) {
		t.Errorf("Keys: got %v, want %v", got, names)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	real := srv.Client()
	for _, k := range append(names, prefix+"deadlines", prefix+"written") {
		if n, _ := real.Exists(ctx, k).Result(); n != 0 {
			t.Errorf("after Close: %s is still there", k)
		}
	}
	if ks, _ := real.Keys(ctx, "*"+prefix+"*").Result(); len(ks) != 0 {
		t.Errorf("after Close: %v", ks)
	}
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("a connection still answers after Close")
	}
	if _, err := s.NewClient(); err == nil {
		t.Error("NewClient after Close: no error")
	}
}

func TestRedisCLI(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli: ", err)
	}
	_, c, _ := open(t)
	key := srv.Key(t)
	_, port, _ := strings.Cut(c.Addr(), ":")
	do := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, cli, append([]string{"-p", port}, args...)...)
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := do("TIME"); got != strconv.FormatInt(t0.Unix(), 10)+"\n0" {
		t.Errorf("redis-cli TIME: got %q", got)
	}
	do("SET", key, "v", "EX", "90")
	c.SetNow(t0.Add(30 * time.Second))
	if got := do("TTL", key); got != "60" {
		t.Errorf("redis-cli TTL: got %q, want 60", got)
	}
}

func TestGateSeesRoundTrips(t *testing.T) {
	t.Parallel()
	_, c, rdb := open(t)
	key := srv.Key(t)
	rdb.Ping(ctx) // the connection's handshake, before the gate
	var rounds []*clientside.Round
	c.SetGate(func(_ context.Context, r *clientside.Round) error { rounds = append(rounds, r); return nil })
	rdb.Incr(ctx, key)
	rdb.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, key); p.TTL(ctx, key); return nil })
	rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, key); return nil })
	c.SetGate(func(context.Context, *clientside.Round) error { return errors.New("stopped") })
	if err := rdb.Get(ctx, key).Err(); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("a gate's error: got %v", err)
	}
	var got []string
	for _, r := range rounds {
		got = append(got, r.Kind+" "+strconv.FormatBool(r.Read)+" "+strconv.Itoa(len(r.Commands))+" "+strings.Join(r.Replies, ","))
	}
	want := []string{"call false 1 1", "pipeline true 2 1,-1", "transaction false 3 OK,QUEUED,*1\r\n:2"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds:\n got %q\nwant %q", got, want)
	}
}
