package measure

import "time"

// RunRecord is what a run writes about itself in Redis (harness/leftovers.Register),
// read back by `ratelab clean`.
type RunRecord struct {
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid"`
	// Process identifies the run's process on Linux ("<boot id> <pid
	// namespace> <pid> <start time>"), empty elsewhere: a clean on the same
	// machine that finds no such process knows the run was killed, without
	// waiting for its marker to expire.
	Process string `json:"process,omitempty"`
}

// Leftover is one run's keys found in a Redis by `ratelab clean`
// (harness/leftovers.FindLeftovers).
type Leftover struct {
	// Prefix is the run's key prefix, "ratelab:<run id>:".
	Prefix string   `json:"prefix"`
	RunID  string   `json:"run_id"`
	Keys   []string `json:"keys"`
	// MemoryBytes sums MEMORY USAGE (SAMPLES 0) over Keys.
	MemoryBytes int64 `json:"memory_bytes"`
	// Record is the run's RunRecord, nil when it left none (a version of
	// ratelab before runs registered, a record older than RecordTTL).
	Record *RunRecord `json:"record,omitempty"`
	// Live: the run's marker is there and its process is not known to be
	// gone. A live run's keys are never removed.
	Live bool `json:"live"`
	// Remove: RemoveLeftovers removes these keys (not Live, and Record is
	// set or the run was named).
	Remove bool `json:"remove"`
}
