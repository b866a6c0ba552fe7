package machine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/measure"
)

// Judge on given figures: limited only when Redis idles while ratelab, the
// system or (without /proc/stat) the load average says the machine is full.
func TestJudge(t *testing.T) {
	t.Parallel()
	base := measure.MachineLoad{Seconds: 10, Cores: 2, RedisNodes: 1, Load1: 1}
	with := func(f func(*measure.MachineLoad)) measure.MachineLoad { m := base; f(&m); return m }
	for _, c := range []struct {
		name    string
		m       measure.MachineLoad
		limited bool
		says    []string
	}{
		// the user's bench: Redis at 12-29 % while the machine was full of other jobs
		{"redis idle, system full", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.SystemBusyPct, m.Load1 = 21, 99, 21.5 }),
			true, []string{"redis-server used 21 % of its core", "2 cores were 99 % busy", "load average 21.5", "so what"}},
		// ratelab itself takes both cores
		{"redis idle, ratelab full", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.RatelabCPUPct, m.SystemBusyPct = 30, 185, 80 }),
			true, []string{"ratelab used 185 % of a core of 2"}},
		{"no /proc/stat, high load", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.SystemBusyPct, m.Load1 = 10, -1, 4 }),
			true, []string{"the load average was 4.0 on 2 cores"}},
		// Redis busy: Redis is the limit, whatever else runs
		{"redis busy", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.SystemBusyPct = 95, 100 }), false, nil},
		{"redis at the threshold", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.SystemBusyPct = RedisIdlePct, 100 }), false, nil},
		// Redis idle on an idle machine: nothing limited (a paced bench)
		{"both idle", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.RatelabCPUPct, m.SystemBusyPct = 5, 20, 15 }), false, nil},
		{"system just under", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.SystemBusyPct = 5, SaturatedPct-0.1 }), false, nil},
		// a high load average is not read when /proc/stat says the cores had room
		{"load but cores free", with(func(m *measure.MachineLoad) { m.RedisCPUPct, m.SystemBusyPct, m.Load1 = 5, 40, 9 }), false, nil},
		{"no Redis CPU", with(func(m *measure.MachineLoad) { m.RedisNodes, m.SystemBusyPct = 0, 100 }), false, nil},
		{"nothing measured", measure.MachineLoad{SystemBusyPct: 100}, false, nil},
	} {
		got := Judge(c.m, "so what")
		if got.MachineLimited != c.limited || (got.Warning != "") != c.limited {
			t.Errorf("%s: limited %v, warning %q; want limited %v", c.name, got.MachineLimited, got.Warning, c.limited)
		}
		for _, s := range c.says {
			if !strings.Contains(got.Warning, s) {
				t.Errorf("%s: warning %q does not say %q", c.name, got.Warning, s)
			}
		}
	}
}

// Span turns two given readings into shares of a core over the span.
func TestSpan(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	a := Reading{At: t0, RedisCPU: 100, RedisNodes: 1, Self: time.Second, Busy: 1000, Total: 2000, Cores: 2, Load1: 3}
	b := Reading{At: t0.Add(10 * time.Second), RedisCPU: 102, RedisNodes: 1, Self: 19 * time.Second, Busy: 2980, Total: 4000, Cores: 2, Load1: 7.5}
	m := Span(a, b, "x")
	want := measure.MachineLoad{Seconds: 10, Cores: 2, RedisCPUPct: 20, RedisNodes: 1, RatelabCPUPct: 180, SystemBusyPct: 99, Load1: 7.5, MachineLimited: true}
	m.Warning = ""
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	a.RedisNodes, a.Total = 0, 0 // INFO refused, no /proc/stat at the start
	if m := Span(a, b, "x"); m.RedisNodes != 0 || m.MachineLimited || m.SystemBusyPct != -1 {
		t.Errorf("without Redis CPU or /proc/stat: %+v", m)
	}
}

// Read against a real redis-server: its CPU and this process's grow.
func TestRead(t *testing.T) {
	t.Parallel()
	c := redistest.Open(t).Client
	ctx := context.Background()
	a := Read(ctx, c)
	for i := 0; i < 2000; i++ {
		c.Incr(ctx, "ratelab:machinetest:n")
	}
	c.Del(ctx, "ratelab:machinetest:n")
	b := Read(ctx, c)
	if a.RedisNodes != 1 || b.RedisCPU <= a.RedisCPU {
		t.Errorf("Redis CPU: %+v then %+v", a, b)
	}
	if b.Self <= a.Self || b.Cores < 1 {
		t.Errorf("own CPU or cores: %+v then %+v", a, b)
	}
	if m := Span(a, b, "x"); m.Seconds <= 0 || m.RedisCPUPct <= 0 {
		t.Errorf("span: %+v", m)
	}
}
