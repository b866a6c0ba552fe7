package measure

// MachineLoad is how busy Redis and the machine ratelab ran on were over a
// command's measured span, and whether the machine, not Redis, was what
// limited it (harness/machine.Judge). Percentages are of one core: 150 is
// one and a half cores busy.
type MachineLoad struct {
	// Seconds is the span's wall time.
	Seconds float64 `json:"seconds"`
	// Cores is the number of cores of ratelab's machine (runtime.NumCPU).
	Cores int `json:"cores"`
	// RedisCPUPct is redis-server's CPU (INFO cpu used_cpu_user +
	// used_cpu_sys) over the span, per node (a cluster's masters are
	// averaged), % of one core: near 100 when Redis is the limit, as it runs
	// commands on one thread. RedisNodes is the number of nodes averaged.
	RedisCPUPct float64 `json:"redis_cpu_pct"`
	RedisNodes  int     `json:"redis_nodes"`
	// RatelabCPUPct is ratelab's own CPU (getrusage, user + sys), % of one core.
	RatelabCPUPct float64 `json:"ratelab_cpu_pct"`
	// SystemBusyPct is the share of all cores busy with any process
	// (/proc/stat: all but idle and iowait), 0..100; -1 when unknown (not
	// Linux).
	SystemBusyPct float64 `json:"system_busy_pct"`
	// Load1 is the 1-minute load average at the span's end (/proc/loadavg);
	// -1 when unknown.
	Load1 float64 `json:"load1"`
	// MachineLimited says Redis was far from busy while the machine was
	// saturated: the command's speed (decisions/s, latencies, its duration)
	// measured the machine, not Redis. Warning says so in one line ("" when
	// not limited).
	MachineLimited bool   `json:"machine_limited"`
	Warning        string `json:"warning,omitempty"`
}
