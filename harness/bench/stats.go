package bench

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// cdfQuantiles are the quantiles (percent) a row's CDF is sampled at.
var cdfQuantiles = []float64{0, 1, 2, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90,
	92, 94, 95, 96, 97, 98, 98.5, 99, 99.3, 99.5, 99.7, 99.8, 99.9, 99.93, 99.95, 99.97, 99.98, 99.99, 99.995, 99.999, 100}

// newHist is a latency histogram: 1 µs to 60 s, 3 significant digits.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// serverStats is what a run's server-side figures are taken from: EVALSHA's
// calls and failures (INFO commandstats) and redis-server's CPU (INFO cpu).
// commandstats' usec is not kept: it counts each call's wall time, which a
// loaded machine inflates (the server descheduled mid-call); the CPU the
// server used over the run, divided by its calls, is what a call costs.
type serverStats struct {
	calls, failed int64
	cpu           float64 // seconds, user + sys
}

// minus is the change from before to s.
func (s serverStats) minus(before serverStats) serverStats {
	return serverStats{calls: s.calls - before.calls,
		failed: s.failed - before.failed, cpu: s.cpu - before.cpu}
}

// stats sums the EVALSHA counters and CPU of the bench's nodes.
func (b *bencher) stats(ctx context.Context) (serverStats, error) {
	var sum serverStats
	for _, node := range b.nodes {
		s, err := nodeStats(ctx, node)
		if err != nil {
			return sum, err
		}
		sum.calls, sum.failed, sum.cpu = sum.calls+s.calls, sum.failed+s.failed, sum.cpu+s.cpu
	}
	return sum, nil
}

// nodeStats reads one server's EVALSHA counters and CPU.
func nodeStats(ctx context.Context, node *redis.Client) (serverStats, error) {
	var s serverStats
	info, err := node.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return s, err
	}
	f := server.InfoFields(info)
	for _, kv := range strings.Split(f["cmdstat_evalsha"], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "calls":
			s.calls = n
		case "failed_calls", "rejected_calls":
			s.failed += n
		}
	}
	s.cpu = server.CPUSeconds(f)
	return s, nil
}

// statsSum adds up one tool's server figures over its runs.
type statsSum struct {
	calls             int64
	cpu, wall, client float64 // seconds
}

// add counts one run: its server change d and the run itself.
func (s *statsSum) add(d serverStats, run measure.BenchRun) {
	s.calls += d.calls
	s.cpu += d.cpu
	s.wall += run.Seconds
	s.client += run.ClientCPUPct / 100 * run.Seconds
}

func (s statsSum) clientPct() float64 {
	if s.wall == 0 {
		return 0
	}
	return 100 * s.client / s.wall
}

// perCall is the server's CPU per EVALSHA over the runs, µs (usPerCall).
func (s statsSum) perCall() float64 { return usPerCall(s.cpu, s.calls) }

// usPerCall is cpu seconds of redis-server spread over calls, µs per call;
// zero without calls. It includes what the server spends around the calls
// (reading and writing the connections, its cron): the cost of a decision
// as the server's one core pays it.
func usPerCall(cpu float64, calls int64) float64 {
	if calls <= 0 {
		return 0
	}
	return cpu * 1e6 / float64(calls)
}

func (s statsSum) cpuPct() float64 {
	if s.wall == 0 {
		return 0
	}
	return 100 * s.cpu / s.wall
}

func medianPerS(runs []measure.BenchRun) float64 {
	if len(runs) == 0 {
		return 0
	}
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = r.PerS
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// processCPU is this process's CPU time so far, user + sys.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
