package measure

import "time"

// Results is everything one ratelab command measured: the run's
// configuration and Redis next to one Row per algorithm x scenario. It is
// what results.json holds; reports render it and never talk to Redis.
type Results struct {
	// Header says how the run was made (flattened into the JSON): tool and
	// version, command ("run", "demo"), run id, Redis, start, duration,
	// complete/error, notes (what was left out and why, e.g. a limiter that
	// cannot take the run's clock) and the configuration that reproduces it.
	Header
	// Config repeats what was asked for, so every number can be traced.
	Config RunConfig `json:"config"`
	// Results has one row per algorithm x scenario, in run order.
	Results []Row `json:"results"`
	// Traffic describes the traffic file of a replay (run --traffic); nil
	// for scenario runs.
	Traffic *TrafficInfo `json:"traffic,omitempty"`
}

// RunConfig is the configuration of a run as the user gave it (after defaults).
type RunConfig struct {
	Algorithms []string `json:"algorithms"`
	Scenarios  []string `json:"scenarios"`
	// Limit and WindowMS override every scenario's own when non-zero.
	Limit    int64  `json:"limit,omitempty"`
	WindowMS int64  `json:"window_ms,omitempty"`
	Clock    string `json:"clock"`
	Seed     int64  `json:"seed"`
	// Prefix is the key prefix of the run's keys (all removed at the end).
	Prefix string `json:"prefix"`
	// TimeoutMS bounds each decision call (0: none); OnError is the policy
	// for failed calls (fail-closed or fail-open).
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	OnError   string `json:"on_error,omitempty"`
}

// RedisInfo describes the Redis a run used.
type RedisInfo struct {
	// Mode is "exec" (a throwaway redis-server), "url", "container",
	// "cluster" (a throwaway local Cluster) or "cluster-url".
	Mode    string `json:"mode"`
	Addr    string `json:"addr"`
	Version string `json:"version"`
}

// Row is the measurement of one algorithm on one scenario. Cost sums are in
// cost units; times in the names' units.
type Row struct {
	Algorithm string `json:"algorithm"`
	Scenario  string `json:"scenario"`
	// LimitDesc is the limiter's own description ("50 per 10s (precision 1s)").
	LimitDesc string `json:"limit_desc"`
	Limit     int64  `json:"limit"`
	WindowMS  int64  `json:"window_ms"`
	Clock     string `json:"clock"`
	// Requests and AcceptedRequests count decisions; Offered and Accepted sum their cost.
	Requests         int64 `json:"requests"`
	AcceptedRequests int64 `json:"accepted_requests"`
	Offered          int64 `json:"offered"`
	Accepted         int64 `json:"accepted"`
	// MaxInWindow is the largest accepted cost within one half-open window
	// (t-W, t] of decision times; MaxWindowEndMS is that t, ms from the
	// scenario's anchor (the aligned boundary).
	MaxInWindow    int64   `json:"max_in_window"`
	MaxWindowEndMS float64 `json:"max_window_end_ms"`
	// Ratio is MaxInWindow / Limit: above 1 the limit was exceeded. It is
	// the contract's limit ratio, the one meaning "ratio" has in results:
	// PerKey.WorstRatio and FamilyResult.MaxRatio are the same quotient
	// (for the worst key; over a verify family's trials), while a bench
	// row's throughput against redis-benchmark is VsRedisBenchmark.
	Ratio float64 `json:"ratio"`
	// Ideal is what an exact sliding-window log accepts at the same times;
	// Fidelity = Accepted / Ideal (1 when both are 0).
	Ideal    int64   `json:"ideal"`
	Fidelity float64 `json:"fidelity"`
	// MemoryBytes sums MEMORY USAGE (SAMPLES 0) over the algorithm's keys at
	// the end of the scenario; Keys counts them.
	MemoryBytes int64 `json:"memory_bytes"`
	Keys        int64 `json:"keys"`
	// KeyNameBytes is the length of the longest of those keys' names (part
	// of their memory); 0 without keys.
	KeyNameBytes int `json:"key_name_bytes,omitempty"`
	// Decision latency as the client saw it, µs (HdrHistogram).
	P50US  int64 `json:"p50_us"`
	P99US  int64 `json:"p99_us"`
	P999US int64 `json:"p999_us"`
	MaxUS  int64 `json:"max_us"`
	// Errors counts decisions that failed (Redis errors, timeouts).
	Errors int64 `json:"errors"`
	// FailedOpen and FailedClosed sum the cost of failed calls that the
	// --on-error policy allowed (counted in Accepted) or denied.
	FailedOpen   int64 `json:"failed_open"`
	FailedClosed int64 `json:"failed_closed"`
	// DurationMS is the wall time of the scenario for this algorithm, ms.
	DurationMS int64 `json:"duration_ms"`
	// Timeline is the cumulative count of accepted and denied cost over
	// time, at most a few hundred points, for plots.
	Timeline []Point `json:"timeline,omitempty"`
	// Trailing is the trailing-window series: the cost accepted within
	// (t-W, t] against t (WindowSeries for a run's scenario, one limit;
	// the worst key's per stretch of time for a traffic replay), at most
	// MaxTrailingPoints points, for plots.
	// PerKey is set by traffic replays only (one limit per client key):
	// per-key figures. In such a row MaxInWindow, MaxWindowEndMS and Ratio
	// are the worst key's, and Ideal sums the exact log's acceptance per key.
	PerKey   *PerKey       `json:"per_key,omitempty"`
	Trailing []WindowPoint `json:"trailing,omitempty"`
	// Worst is the worst window told apart at its aligned boundary (see
	// WindowSplit); nil when nothing was accepted, and for traffic
	// replays (their worst window is a key's).
	Worst *WindowSplit `json:"worst,omitempty"`
}

// Point is one step of a Row's timeline.
type Point struct {
	// TMS is the decision time, ms from the scenario's anchor (negative before it).
	TMS float64 `json:"t_ms"`
	// Accepted and Denied are cumulative cost sums up to and including TMS.
	Accepted int64 `json:"accepted"`
	Denied   int64 `json:"denied"`
}

// WindowSplit is a row's worst window (t-W, t] told apart at the aligned
// window boundary inside it (a half-open window of length W holds exactly
// one multiple of W from the anchor): what the limiter accepted on each
// side of the boundary, which is why a window limiter breaks (a count
// that restarts there, a bucket that refilled, a previous window weighed
// in at part).
type WindowSplit struct {
	// StartMS and EndMS bound the window (StartMS, EndMS]; BoundaryMS is
	// the boundary inside it; all ms from the scenario's anchor.
	StartMS    float64 `json:"start_ms"`
	EndMS      float64 `json:"end_ms"`
	BoundaryMS float64 `json:"boundary_ms"`
	// Before is what was accepted in (StartMS, BoundaryMS), After in
	// [BoundaryMS, EndMS].
	Before WindowPart `json:"before"`
	After  WindowPart `json:"after"`
}

// WindowPart is the accepted decisions of one side of a WindowSplit.
type WindowPart struct {
	// Accepted sums their cost; Requests counts them.
	Accepted int64 `json:"accepted"`
	Requests int64 `json:"requests"`
	// FirstMS and LastMS are the first and last of them, ms from the
	// anchor; both 0 when there are none.
	FirstMS float64 `json:"first_ms"`
	LastMS  float64 `json:"last_ms"`
}

// SplitWindow is the WindowSplit of the window (end-window, end] over
// events (accepted, sorted by At, times from an anchor aligned on window).
// A window of zero gives the zero WindowSplit.
func SplitWindow(events []Event, window, end time.Duration) WindowSplit {
	if window <= 0 {
		return WindowSplit{}
	}
	start := end - window
	b := end - ((end%window)+window)%window // the multiple of window in (start, end]
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	s := WindowSplit{StartMS: ms(start), EndMS: ms(end), BoundaryMS: ms(b)}
	for _, e := range events {
		if e.At <= start || e.At > end {
			continue
		}
		p := &s.After
		if e.At < b {
			p = &s.Before
		}
		if p.Requests == 0 {
			p.FirstMS = ms(e.At)
		}
		p.Accepted += e.Cost
		p.Requests++
		p.LastMS = ms(e.At)
	}
	return s
}
