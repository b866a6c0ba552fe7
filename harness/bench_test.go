package harness_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
)

// BenchmarkPipelinedRun measures ratelab's own cost of one decision on the
// path verify and replay take: Runner.Execute in virtual time, 256 calls
// per round trip, with and without virtual key expiry (verify's and
// replay's default), on a sliding log and a fixed window. The schedule is
// b.N arrivals 1 ms apart over 8 keys and 2 clients. -benchmem's B/op and
// allocs/op are per decision; cpu-ns/decision is this process's CPU (user
// + sys; redis-server is another process) per decision; ns/op includes
// the round trips, so it moves with Redis and the machine's load.
//
//	go test -run '^$' -bench PipelinedRun -benchmem ./harness/
func BenchmarkPipelinedRun(b *testing.B) {
	l := limit.Limit{Count: 1000, Window: time.Second}
	for _, name := range []string{"sliding-log", "fixed-window"} {
		for _, expiry := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/expiry=%t", name, expiry), func(b *testing.B) {
				lim, err := algorithms.New(name, srv.Client(), l)
				if err != nil {
					b.Fatal(err)
				}
				arr := make([]scenarios.Arrival, b.N)
				for i := range arr {
					arr[i] = scenarios.Arrival{At: time.Duration(i) * time.Millisecond, Key: fmt.Sprintf("k%d", i%8), Cost: 1, Client: i % 2}
				}
				sched := scenarios.Schedule{Scenario: "bench", Params: scenarios.Params{Limit: l.Count, Window: l.Window}, Arrivals: arr}
				r := &harness.Runner{Redis: srv.Client(), Clock: harness.VirtualClock, Pipeline: 256, Expiry: expiry}
				job := harness.Job{Limiter: lim, Limit: l, Prefix: fmt.Sprintf("%s:%s:%t:%d:", srv.Key(b), name, expiry, b.N)}.WithSchedule(sched)
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				cpu0 := processCPU()
				b.ReportAllocs()
				b.ResetTimer()
				_, outs, err := execute(r, job)
				b.StopTimer()
				cpu := processCPU() - cpu0
				runtime.ReadMemStats(&m1)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs[0] {
					if o.Err != nil {
						b.Fatal(o.Err)
					}
				}
				b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/decision")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/decision")
			})
		}
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
