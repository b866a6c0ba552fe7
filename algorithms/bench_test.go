package algorithms_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
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
// own time per call (server-µs/op, from INFO commandstats).
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

// cmdStats is EVALSHA's line of INFO commandstats.
type cmdStats struct{ calls, usec int64 }

// evalshaStats returns EVALSHA's calls and usec from INFO commandstats.
func evalshaStats(b *testing.B) (s cmdStats) {
	b.Helper()
	info, err := srv.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		stats, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.calls = n
			case "usec":
				s.usec = n
			}
		}
	}
	return s
}

// reportServerTime reports the server's µs per EVALSHA between two readings.
func reportServerTime(b *testing.B, before, after cmdStats) {
	b.Helper()
	if after.calls > before.calls {
		b.ReportMetric(float64(after.usec-before.usec)/float64(after.calls-before.calls), "server-µs/op")
	}
}
