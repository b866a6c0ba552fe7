package algorithms_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

// benchLimit is the limit of the benchmarks: 100 per minute, so the allow
// path's keys never fill within a run and the deny path's hot key stays full.
var benchLimit = limit.Limit{Count: 100, Window: time.Minute}

// benchKeys is the allow path's key space.
const benchKeys = 100_000

var benchRun atomic.Int64

// BenchmarkAllow measures one Allow call (one EVALSHA round trip, Redis
// TIME) of each algorithm against the test package's redis-server: on the
// allow path (a fresh key space, each call on another key) and the deny
// path (one hot key at its limit). Besides ns/op it reports the server's
// CPU per call (server-µs/op: INFO cpu's used_cpu_user + used_cpu_sys over
// INFO commandstats' EVALSHA calls; not commandstats' usec, which counts
// wall time and grows on a loaded machine).
//
//	go test -run '^$' -bench Allow ./algorithms/
func BenchmarkAllow(b *testing.B) {
	for _, name := range algorithms.Names() {
		for _, path := range []string{"allow", "deny"} {
			b.Run(name+"/"+path, func(b *testing.B) {
				lim, err := algorithms.New(name, srv.Client(), benchLimit)
				if err != nil {
					b.Fatal(err)
				}
				prefix := fmt.Sprintf("bench:%d:", benchRun.Add(1))
				keys := benchKeySet(prefix, path)
				before := evalshaStats(b)
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if _, err := lim.Allow(ctx, keys[i%len(keys)], 1, algorithms.RedisTime()); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reportServerTime(b, before, evalshaStats(b))
			})
		}
	}
}

// BenchmarkAllowParallel is BenchmarkAllow from GOMAXPROCS goroutines at
// once (b.RunParallel): throughput when calls overlap.
func BenchmarkAllowParallel(b *testing.B) {
	for _, name := range algorithms.Names() {
		for _, path := range []string{"allow", "deny"} {
			b.Run(name+"/"+path, func(b *testing.B) {
				lim, err := algorithms.New(name, srv.Client(), benchLimit)
				if err != nil {
					b.Fatal(err)
				}
				prefix := fmt.Sprintf("bench:%d:", benchRun.Add(1))
				keys := benchKeySet(prefix, path)
				var next atomic.Int64
				before := evalshaStats(b)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := next.Add(1)
						if _, err := lim.Allow(ctx, keys[int(i)%len(keys)], 1, algorithms.RedisTime()); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				reportServerTime(b, before, evalshaStats(b))
			})
		}
	}
}

func benchKeySet(prefix, path string) []string {
	if path == "deny" {
		return []string{prefix + "{hot}"}
	}
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s{%012d}", prefix, i)
	}
	return keys
}

// cmdStats is EVALSHA's calls (INFO commandstats) and the server's CPU
// seconds, user + sys (INFO cpu).
type cmdStats struct {
	calls int64
	cpu   float64
}

// evalshaStats returns EVALSHA's calls and the server's CPU.
func evalshaStats(b *testing.B) (s cmdStats) {
	b.Helper()
	info, err := srv.Client().Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
			continue
		}
		stats, ok := strings.CutPrefix(line, "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			if k == "calls" {
				s.calls = n
			}
		}
	}
	return s
}

// reportServerTime reports the server's CPU µs per EVALSHA between two
// readings.
func reportServerTime(b *testing.B, before, after cmdStats) {
	b.Helper()
	if after.calls > before.calls {
		b.ReportMetric((after.cpu-before.cpu)*1e6/float64(after.calls-before.calls), "server-µs/op")
	}
}

// BenchmarkPipelinedDecision measures ratelab's own cost of one decision on
// the pipelined path that verify, replay and run take: Call (WriteCall over
// the last batch's calls for a CallWriter, as the harness), a ScriptPipe
// round trip of 256 calls, Decode, on an injected clock, each call on
// another of 4,096 keys. -benchmem's B/op and allocs/op are per decision
// (allocs/decision unrounded); ns/op includes the round trip, so it moves
// with Redis and the machine's load: compare allocations first.
//
//	go test -run '^$' -bench PipelinedDecision -benchmem ./algorithms/
func BenchmarkPipelinedDecision(b *testing.B) {
	const batch = 256
	for _, name := range algorithms.Names() {
		b.Run(name, func(b *testing.B) {
			lim, err := algorithms.New(name, srv.Client(), benchLimit)
			if err != nil {
				b.Fatal(err)
			}
			s := lim.(algorithms.Scripted)
			for _, sc := range algorithms.Scripts() {
				if err := sc.Load(ctx, srv.Client()).Err(); err != nil {
					b.Fatal(err)
				}
			}
			prefix := fmt.Sprintf("bench:%d:", benchRun.Add(1))
			keys := make([]string, 4096)
			for i := range keys {
				keys[i] = fmt.Sprintf("%s{%06d}", prefix, i)
			}
			pipe := algorithms.NewScriptPipe(srv.Client())
			calls := make([]algorithms.ScriptCall, 0, batch)
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			cpu0 := processCPU()
			b.ResetTimer()
			w, _ := s.(algorithms.CallWriter)
			for n := 0; n < b.N; n += batch {
				calls = calls[:0]
				for i := n; i < min(n+batch, b.N); i++ {
					key, at := keys[i%len(keys)], algorithms.At(t0.Add(time.Duration(i)*time.Millisecond))
					if w != nil { // as the harness: over the calls of the last batch
						calls = calls[:len(calls)+1]
						if err := w.WriteCall(&calls[len(calls)-1], key, 1, at); err != nil {
							b.Fatal(err)
						}
						continue
					}
					c, err := s.Call(key, 1, at)
					if err != nil {
						b.Fatal(err)
					}
					calls = append(calls, c)
				}
				cmds, err := pipe.Exec(ctx, calls)
				if err != nil {
					b.Fatal(err)
				}
				for i, cmd := range cmds {
					if _, err := s.Decode(calls[i], cmd.Val()); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			cpu := processCPU() - cpu0
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/decision")
			// the test process's CPU (user + sys; redis-server is another process)
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/decision")
		})
	}
}

// processCPU is this process's CPU time so far, user + sys.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
