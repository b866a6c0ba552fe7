package measure

// Bench paths (contract: the "path" of a bench row).
const (
	// PathAllow spreads decisions over many keys (Keys), so nearly all are accepted.
	PathAllow = "allow"
	// PathDeny sends every decision to one hot key held at its limit, so
	// nearly all are denied.
	PathDeny = "deny"
)

// BenchPaths lists the paths in run order.
var BenchPaths = []string{PathAllow, PathDeny}

// BenchResults is what `ratelab bench` measured; results.json holds it.
type BenchResults struct {
	// Header says how the bench was made (Command "bench"), flattened into the JSON.
	Header
	Config BenchRunConfig `json:"config"`
	// Results has one row per algorithm x path, in run order.
	Results []BenchRow `json:"results"`
	// Machine is how busy Redis and this machine were over the rows, and
	// whether the machine was the limit (nil when no row was measured).
	Machine *MachineLoad `json:"machine,omitempty"`
}

// BenchRunConfig repeats what was asked for, after defaults.
type BenchRunConfig struct {
	Algorithms            []string `json:"algorithms"`
	Paths                 []string `json:"paths"`
	Limit                 int64    `json:"limit"`
	WindowMS              int64    `json:"window_ms"`
	Clients               int      `json:"clients"`
	Pipeline              int      `json:"pipeline"`
	DurationMS            int64    `json:"duration_ms"`
	Requests              int64    `json:"requests,omitempty"`
	Keys                  int      `json:"keys"`
	RatePerS              float64  `json:"rate_per_s,omitempty"`
	Rounds                int      `json:"rounds"`
	Procs                 int      `json:"procs"`
	CompareRedisBenchmark bool     `json:"compare_redis_benchmark"`
	RedisBenchmark        string   `json:"redis_benchmark,omitempty"`
	Prefix                string   `json:"prefix"`
}

// BenchRow is the throughput and latency of one algorithm on one path.
type BenchRow struct {
	Algorithm string `json:"algorithm"`
	// Path is PathAllow or PathDeny.
	Path     string `json:"path"`
	Clients  int    `json:"clients"`
	Pipeline int    `json:"pipeline"`
	// Keys is the key space (1 on the deny path).
	Keys      int    `json:"keys"`
	Limit     int64  `json:"limit"`
	WindowMS  int64  `json:"window_ms"`
	LimitDesc string `json:"limit_desc"`
	// RatePerS is the target rate (0: closed loop); Corrected says the
	// latencies were corrected for coordinated omission.
	RatePerS  float64 `json:"rate_per_s,omitempty"`
	Corrected bool    `json:"corrected,omitempty"`
	// Decisions, Allowed, Denied and Errors count ratelab's decisions over all its runs.
	Decisions int64 `json:"decisions"`
	Allowed   int64 `json:"allowed"`
	Denied    int64 `json:"denied"`
	Errors    int64 `json:"errors"`
	// DecisionsPerS is the median of ratelab's runs, decisions per second.
	DecisionsPerS float64 `json:"decisions_per_s"`
	// Latency of one decision as the client saw it (the round trip of its
	// pipeline), µs, over all ratelab runs.
	P50US  int64 `json:"p50_us"`
	P99US  int64 `json:"p99_us"`
	P999US int64 `json:"p999_us"`
	MaxUS  int64 `json:"max_us"`
	// ServerUSPerCall is redis-server's CPU per EVALSHA during ratelab's
	// runs (INFO cpu: the change of used_cpu_user + used_cpu_sys, divided by
	// the change of INFO commandstats' EVALSHA calls), µs; not commandstats'
	// usec, which counts wall time and grows on a loaded machine. ServerCPUPct is redis-server's
	// CPU (user + sys) over the runs' wall time, % of one core.
	ServerUSPerCall float64 `json:"server_us_per_call"`
	ServerCPUPct    float64 `json:"server_cpu_pct"`
	// ClientCPUPct is ratelab's own CPU over its runs' wall time, % of one core.
	ClientCPUPct float64 `json:"client_cpu_pct"`
	// RedisBenchmarkPerS is the median of redis-benchmark's runs (same
	// script, arguments, clients, pipeline and number of decisions), and
	// VsRedisBenchmark = DecisionsPerS / RedisBenchmarkPerS: ratelab's
	// throughput as a fraction of redis-benchmark's (1 = as fast; not a
	// limit ratio, see Row.Ratio). Only when compared; zero otherwise.
	// Its JSON key was "ratio" before; reading still accepts that
	// (see UnmarshalJSON).
	RedisBenchmarkPerS            float64 `json:"redis_benchmark_per_s,omitempty"`
	RedisBenchmarkServerUSPerCall float64 `json:"redis_benchmark_server_us_per_call,omitempty"`
	RedisBenchmarkServerCPUPct    float64 `json:"redis_benchmark_server_cpu_pct,omitempty"`
	RedisBenchmarkClientCPUPct    float64 `json:"redis_benchmark_client_cpu_pct,omitempty"`
	VsRedisBenchmark              float64 `json:"vs_redis_benchmark,omitempty"`
	// Runs lists every run in the order made.
	Runs []BenchRun `json:"runs"`
	// CDF is the latency distribution of ratelab's decisions: the latency
	// at each quantile, for plots.
	CDF []CDFPoint `json:"cdf,omitempty"`
}

// BenchRun is one run of one tool.
type BenchRun struct {
	// Tool is "ratelab" or "redis-benchmark".
	Tool      string  `json:"tool"`
	Decisions int64   `json:"decisions"`
	Seconds   float64 `json:"seconds"`
	PerS      float64 `json:"per_s"`
	// ServerUSPerCall and ServerCPUPct as in BenchRow, for this run.
	ServerUSPerCall float64 `json:"server_us_per_call"`
	ServerCPUPct    float64 `json:"server_cpu_pct"`
	// ClientCPUPct is the tool's own CPU (user + sys) over the run's wall
	// time, % of one core: what the load generator takes from the machine.
	ClientCPUPct float64 `json:"client_cpu_pct"`
	P50US        int64   `json:"p50_us"`
	P99US        int64   `json:"p99_us"`
}

// CDFPoint is one point of a latency distribution: Quantile (0..1) of the
// decisions took at most US µs.
type CDFPoint struct {
	Quantile float64 `json:"q"`
	US       int64   `json:"us"`
}
