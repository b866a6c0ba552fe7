package measure

// TrafficInfo describes the traffic file a replay read and how the replay
// went as a whole.
type TrafficInfo struct {
	// Source names the traffic (a file path, or what the caller said).
	Source string `json:"source"`
	// Format is the file's format (csv, jsonl or access-log); Gzip says it
	// was compressed.
	Format string `json:"format"`
	Gzip   bool   `json:"gzip,omitempty"`
	// Lines read (header and blank lines included), Records replayed, and
	// Malformed lines skipped (out of order, a cost above the limit and
	// unparsable lines included); Examples are the first of them.
	Lines      int64         `json:"lines"`
	Records    int64         `json:"records"`
	Malformed  int64         `json:"malformed"`
	OutOfOrder int64         `json:"out_of_order,omitempty"`
	Examples   []LineExample `json:"examples,omitempty"`
	// Keys is the number of distinct client keys.
	Keys int64 `json:"keys"`
	// Anchor is the traffic's first time aligned down to the window
	// (RFC 3339, UTC): t = 0 of the rows' times. SpanMS is the time from
	// the anchor to the last record, ms.
	Anchor string  `json:"anchor"`
	SpanMS float64 `json:"span_ms"`
	// Decisions is the number of decisions made over all algorithms, and
	// DecisionsPerSec that over the replay's wall time.
	Decisions       int64   `json:"decisions"`
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	// Pipeline is the number of decisions sent per round trip.
	Pipeline int `json:"pipeline"`
	// ReplayS is the wall time of the replay itself (from the first call
	// to the last answer, memory readings included), s. RedisCPUS is the
	// CPU redis-server used over it (INFO cpu: used_cpu_user + used_cpu_sys,
	// summed over RedisCores nodes), s; zero when INFO was refused.
	// RedisCPUS / (ReplayS x RedisCores) is the fraction of the Redis
	// ceiling (one busy core per node) the replay reached (CeilingFraction).
	ReplayS    float64 `json:"replay_s,omitempty"`
	RedisCPUS  float64 `json:"redis_cpu_s,omitempty"`
	RedisCores int     `json:"redis_cores,omitempty"`
	// PeakRSSBytes is the peak resident set size of the ratelab process
	// (getrusage ru_maxrss) when the replay ended; 0 where unknown.
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
}

// LineExample is one malformed line of a traffic file.
type LineExample struct {
	// Line is the 1-based line number in the (decompressed) file.
	Line   int64  `json:"line"`
	Reason string `json:"reason"`
}

// CeilingFraction is the fraction of the Redis ceiling the replay reached:
// the Redis CPU it used over its wall time and nodes (1 = every node's
// core busy all along); 0 when not measured.
func (t *TrafficInfo) CeilingFraction() float64 {
	if t.ReplayS <= 0 || t.RedisCores <= 0 {
		return 0
	}
	return t.RedisCPUS / (t.ReplayS * float64(t.RedisCores))
}
