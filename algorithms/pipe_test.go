package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// counter returns a script that increments KEYS[1] by ARGV[1] and returns
// the new value, so a reply tells how many calls of the key ran before
// it; name makes its SHA1 unique to the test.
func counter(name string) *redis.Script {
	return redis.NewScript("-- " + name + "\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])")
}

// incrs returns n calls of s alternating over keys, each adding 1.
func incrs(s *redis.Script, n int, keys ...string) []algorithms.ScriptCall {
	calls := make([]algorithms.ScriptCall, n)
	for i := range calls {
		calls[i] = algorithms.ScriptCall{Script: s, Keys: []string{keys[i%len(keys)]}, Args: []any{1}}
	}
	return calls
}

// replies returns the integer replies of cmds, failing t on any error.
func replies(t *testing.T, cmds []*redis.Cmd) []int64 {
	t.Helper()
	out := make([]int64, len(cmds))
	for i, c := range cmds {
		v, err := c.Int64()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		out[i] = v
	}
	return out
}

// The one pipelined executor. Each step flushes (or not)
// the script cache, runs a batch, and checks that every call ran exactly
// once, in order (the counters' replies), and how often NOSCRIPT made it
// load the scripts.
func TestScriptPipeResendsAfterFlush(t *testing.T) {
	for _, tx := range []bool{false, true} {
		t.Run(fmt.Sprintf("tx=%v", tx), func(t *testing.T) {
			a, b := counter(t.Name()+" a"), counter(t.Name()+" b")
			ka, kb := srv.Key(t), srv.Key(t)
			steps := []struct {
				name  string
				flush bool
				load  []*redis.Script // loaded after the flush, before the batch
				calls []algorithms.ScriptCall
				want  []int64
				loads int // ScriptPipe.Loads after the step
			}{
				// nothing loaded yet: the whole batch meets NOSCRIPT once
				{name: "first batch", flush: true, calls: incrs(a, 4, ka, kb), want: []int64{1, 1, 2, 2}, loads: 1},
				// scripts in the cache: no load
				{name: "loaded", calls: incrs(a, 2, ka, kb), want: []int64{3, 3}, loads: 1},
				// SCRIPT FLUSH between batches: loaded again, resent
				{name: "after a flush", flush: true, calls: incrs(a, 4, ka, kb), want: []int64{4, 4, 5, 5}, loads: 2},
				// only b is missing: a's calls run once, b's are resent
				{name: "one script missing", flush: true, load: []*redis.Script{a},
					calls: append(incrs(b, 2, ka), incrs(a, 2, ka)...), want: []int64{8, 9, 6, 7}, loads: 3},
			}
			p := algorithms.NewScriptPipe(srv.Client())
			p.Tx = tx
			for i, s := range steps {
				if s.flush {
					if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
						t.Fatal(err)
					}
				}
				for _, sc := range s.load {
					if err := sc.Load(ctx, srv.Client()).Err(); err != nil {
						t.Fatal(err)
					}
				}
				cmds, err := p.Exec(ctx, s.calls)
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, s.name, err)
				}
				got := replies(t, cmds)
				if fmt.Sprint(got) != fmt.Sprint(s.want) || p.Loads != s.loads {
					t.Errorf("step %d (%s): got replies %v after %d loads, want %v after %d", i, s.name, got, p.Loads, s.want, s.loads)
				}
			}
			// every call ran exactly once: 2+1+2+4 on ka, 2+1+2 on kb
			if va, vb := srv.Client().Get(ctx, ka).Val(), srv.Client().Get(ctx, kb).Val(); va != "9" || vb != "5" {
				t.Errorf("counters %s, %s; want 9, 5", va, vb)
			}
		})
	}
}

// noLoad is a client whose SCRIPT LOAD answers the SHA1 without loading
// anything: a server that forgets its scripts as soon as it learns them.
type noLoad struct{ *redis.Client }

func (c noLoad) ScriptLoad(ctx context.Context, src string) *redis.StringCmd {
	return redis.NewStringResult(redis.NewScript(src).Hash(), nil)
}

// Loading the scripts refused or in vain: Exec stops after MaxLoads loads
// (or at the refused SCRIPT LOAD) with an error naming the script, and
// leaves NOSCRIPT in the calls that never ran.
func TestScriptPipeLoadRefused(t *testing.T) {
	s := counter(t.Name())
	key := server.KeyPrefix + srv.Key(t) // the ACL user's keys
	if err := redistest.SetACLUser(ctx, srv.Client(), "pipe-noload", "pw", []string{"evalsha", "ping", "multi", "exec"}); err != nil {
		t.Fatal(err)
	}
	defer srv.Client().Do(ctx, "ACL", "DELUSER", "pipe-noload")
	opt := *srv.Client().Options()
	opt.Username, opt.Password = "pipe-noload", "pw"
	acl := redis.NewClient(&opt)
	defer acl.Close()

	cases := []struct {
		name      string
		rdb       algorithms.PipeClient
		maxLoads  int
		wantLoads int
		wantErr   string // besides the script's SHA1
	}{
		// SCRIPT LOAD is refused (NOPERM): one try, the refusal named
		{name: "NOPERM", rdb: acl, wantLoads: 1, wantErr: "SCRIPT LOAD after NOSCRIPT: NOPERM"},
		// negative MaxLoads: never load
		{name: "never", rdb: srv.Client(), maxLoads: -1, wantLoads: 0, wantErr: "NOSCRIPT after loading it 0 times in a row"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			p := algorithms.NewScriptPipe(c.rdb)
			p.MaxLoads = c.maxLoads
			cmds, err := p.Exec(ctx, incrs(s, 3, key))
			if err == nil || !strings.Contains(err.Error(), s.Hash()) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("got error %v; want one naming script %s and saying %q", err, s.Hash(), c.wantErr)
			}
			if p.Loads != c.wantLoads {
				t.Errorf("%d loads, want %d", p.Loads, c.wantLoads)
			}
			var re redis.Error
			if !errors.As(err, &re) {
				t.Errorf("%v does not wrap Redis's reply", err)
			}
			for i, cmd := range cmds {
				if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
					t.Errorf("call %d: %v, want NOSCRIPT (it never ran)", i, cmd.Err())
				}
			}
			if n, _ := srv.Client().Exists(ctx, key).Result(); n != 0 {
				t.Errorf("the key exists: a call ran")
			}
		})
	}
}

// Loads that never stick are bounded by MaxLoads; then the calls go once as
// EVAL (the script's body), which no flush refuses, and they run, in order.
func TestScriptPipeEvalAfterLoadsInVain(t *testing.T) {
	s := counter(t.Name())
	for _, c := range []struct {
		name                string
		maxLoads, wantLoads int
	}{{"two", 2, 2}, {"default", 0, algorithms.DefaultMaxLoads}} {
		t.Run(c.name, func(t *testing.T) {
			key := srv.Key(t)
			if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			p := algorithms.NewScriptPipe(noLoad{srv.Client()})
			p.MaxLoads = c.maxLoads
			for round := 1; round <= 2; round++ { // the second Exec reuses the EVAL's commands
				if err := srv.Client().ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				cmds, err := p.Exec(ctx, incrs(s, 3, key))
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				for i, cmd := range cmds {
					if cmd.Err() != nil {
						t.Errorf("round %d call %d: %v", round, i, cmd.Err())
					}
				}
			}
			if p.Loads != 2*c.wantLoads {
				t.Errorf("%d loads, want %d", p.Loads, 2*c.wantLoads)
			}
			if n, _ := srv.Client().Get(ctx, key).Int(); n != 6 {
				t.Errorf("the key holds %d, want 6 (every call ran once)", n)
			}
		})
	}
}

// BenchmarkScriptPipe measures one call of a batch of 64 (-benchmem, and
// allocs/call unrounded), the script loaded; it replies 1, so that go-redis
// boxes no reply and the figure is the executor's: on the same 64 keys
// every batch (commands reused as they are), on keys changing every call
// (bench's allow path: each new key is boxed into its command), and, to
// compare, go-redis's Pipeline with a new EvalSha per call.
func BenchmarkScriptPipe(b *testing.B) {
	s := redis.NewScript("-- " + b.Name() + "\nredis.call('INCRBY', KEYS[1], ARGV[1]) return 1")
	if err := s.Load(ctx, srv.Client()).Err(); err != nil {
		b.Fatal(err)
	}
	const batch = 64
	prefix := srv.Key(b)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s{%04d}", prefix, i)
	}
	for _, c := range []struct {
		name    string
		move    bool // a new key for every call
		goredis bool // go-redis's own EvalSha instead of a ScriptPipe
	}{{"same-keys", false, false}, {"new-keys", true, false}, {"go-redis-evalsha", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			calls := make([]algorithms.ScriptCall, batch)
			for i := range calls {
				calls[i] = algorithms.ScriptCall{Script: s, Keys: []string{keys[i]}, Args: []any{"1"}}
			}
			p := algorithms.NewScriptPipe(srv.Client())
			gp := srv.Client().Pipeline()
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			b.ResetTimer()
			for n := 0; n < b.N; n += batch {
				size := min(batch, b.N-n)
				if c.move {
					for i := range calls[:size] {
						calls[i].Keys[0] = keys[(n+i)%len(keys)]
					}
				}
				if c.goredis {
					for _, call := range calls[:size] {
						gp.EvalSha(ctx, call.Script.Hash(), call.Keys, call.Args...)
					}
					if _, err := gp.Exec(ctx); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, err := p.Exec(ctx, calls[:size]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// allocs/op is rounded down to an integer: this is exact
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/call")
		})
	}
}
