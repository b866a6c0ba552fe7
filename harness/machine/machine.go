// Package machine tells whether the machine ratelab runs on, not Redis, is
// what limits a command: Redis's CPU share over the span (INFO cpu) beside
// ratelab's own CPU (getrusage) and the whole system's (/proc/stat, the
// load average). Judge decides on given figures; Read and Span take them.
package machine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
)

// Thresholds of Judge, in % (of one core for the CPU figures).
const (
	// RedisIdlePct: Redis below this share of its core is not the limit
	// (a Redis that is runs near 100 %).
	RedisIdlePct = 50
	// SaturatedPct: the system at or above this share of all cores busy,
	// or ratelab at or above it of every core, is saturated.
	SaturatedPct = 90
	// LoadPerCore: without /proc/stat, a 1-minute load average of this many
	// runnable threads per core is saturation.
	LoadPerCore = 2
)

// Judge sets m.MachineLimited and m.Warning from m's figures: limited when
// Redis's CPU share is under RedisIdlePct while the machine is saturated:
// ratelab's own CPU at SaturatedPct of all m.Cores or more, or the system
// at SaturatedPct busy or more, or (SystemBusyPct unknown) a load average
// of LoadPerCore x Cores or more. consequence ends the warning: what the
// command's figures are worth then. A zero Seconds, Cores or RedisNodes
// (nothing measured) is never limited.
func Judge(m measure.MachineLoad, consequence string) measure.MachineLoad {
	m.MachineLimited, m.Warning = false, ""
	if m.Seconds <= 0 || m.Cores < 1 || m.RedisNodes < 1 || m.RedisCPUPct >= RedisIdlePct {
		return m
	}
	var why []string
	if m.RatelabCPUPct >= SaturatedPct*float64(m.Cores) {
		why = append(why, fmt.Sprintf("ratelab used %.0f %% of a core of %d", m.RatelabCPUPct, m.Cores))
	}
	if m.SystemBusyPct >= SaturatedPct {
		why = append(why, fmt.Sprintf("the machine's %d cores were %.0f %% busy", m.Cores, m.SystemBusyPct))
	}
	if m.SystemBusyPct < 0 && m.Load1 >= LoadPerCore*float64(m.Cores) {
		why = append(why, fmt.Sprintf("the load average was %.1f on %d cores", m.Load1, m.Cores))
	}
	if len(why) == 0 {
		return m
	}
	m.MachineLimited = true
	m.Warning = fmt.Sprintf("the machine, not Redis, was the limit: redis-server used %.0f %% of its core while %s (load average %s); %s",
		m.RedisCPUPct, strings.Join(why, " and "), loadText(m.Load1), consequence)
	return m
}

func loadText(l float64) string {
	if l < 0 {
		return "unknown"
	}
	return strconv.FormatFloat(l, 'f', 1, 64)
}

// Reading is what a span's figures are taken from, at one instant.
type Reading struct {
	At       time.Time
	RedisCPU float64 // seconds, summed over RedisNodes; RedisNodes 0: INFO refused
	// RedisNodes is the number of nodes RedisCPU sums.
	RedisNodes int
	Self       time.Duration // this process's CPU, user + sys
	// Busy and Total are /proc/stat's jiffies of all cores: not idle, and
	// all; both 0 when unreadable.
	Busy, Total uint64
	// Cores is runtime.NumCPU; Load1 the 1-minute load average (-1: unknown).
	Cores int
	Load1 float64
}

// Read takes a Reading of c's Redis (a server, or a cluster's masters) and
// of this machine. A Redis that refuses INFO leaves RedisNodes 0.
func Read(ctx context.Context, c redis.UniversalClient) Reading {
	r := Reading{At: time.Now(), Self: selfCPU(), Cores: runtime.NumCPU(), Load1: loadAvg()}
	if cpu, nodes, err := server.CPU(ctx, c); err == nil {
		r.RedisCPU, r.RedisNodes = cpu, nodes
	}
	r.Busy, r.Total = procStat()
	return r
}

// Span is the figures from a to b (Readings of one Redis, b later), judged
// (Judge, with consequence): the cores and load average are b's;
// RedisNodes is 0 when either reading has no Redis CPU, SystemBusyPct -1
// when either has no /proc/stat.
func Span(a, b Reading, consequence string) measure.MachineLoad {
	m := measure.MachineLoad{Seconds: b.At.Sub(a.At).Seconds(), Cores: b.Cores, SystemBusyPct: -1, Load1: b.Load1}
	if m.Seconds <= 0 {
		return m
	}
	if a.RedisNodes > 0 && b.RedisNodes == a.RedisNodes {
		m.RedisNodes = a.RedisNodes
		m.RedisCPUPct = 100 * (b.RedisCPU - a.RedisCPU) / m.Seconds / float64(m.RedisNodes)
	}
	m.RatelabCPUPct = 100 * (b.Self - a.Self).Seconds() / m.Seconds
	if a.Total > 0 && b.Total > a.Total && b.Busy >= a.Busy {
		m.SystemBusyPct = 100 * float64(b.Busy-a.Busy) / float64(b.Total-a.Total)
	}
	return Judge(m, consequence)
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStat reads the "cpu" line of /proc/stat: jiffies busy (all but idle
// and iowait) and in all; zeros when unreadable.
func procStat() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	var idle uint64
	for i, v := range f[1:] {
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		n, _ := strconv.ParseUint(v, 10, 64)
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return total - idle, total
}

// loadAvg is /proc/loadavg's 1-minute figure; -1 when unreadable.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return l
}
