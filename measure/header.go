package measure

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/limit"
)

// SchemaVersion is the version of the results files this ratelab writes
// (results.json, verify.json): the "schema_version" of their Header. 0 —
// absent — is the shape before the Header (round 1), which the readers
// still accept; a file from a newer ratelab is refused.
const SchemaVersion = 2

// Header is what every result of a ratelab command says about how it was
// made, embedded in Results, BenchResults, CapacityResults and
// VerifyReport (its fields are flattened into their JSON). It is plain
// data: the harness fills it (harness.Session.Header), reports show it.
type Header struct {
	// SchemaVersion is SchemaVersion when written; 0 in a file of the
	// previous shape.
	SchemaVersion int `json:"schema_version,omitempty"`
	// Tool is always "ratelab"; ToolVersion the build that wrote the file
	// (internal/version: "v0.3.0", "3860d7d-dirty"; "" in older files).
	Tool        string `json:"tool,omitempty"`
	ToolVersion string `json:"tool_version,omitempty"`
	// Command is the subcommand that produced the result ("run", "demo",
	// "bench", "capacity", "verify").
	Command string `json:"command,omitempty"`
	// RunID names the run; its keys were under "ratelab:<RunID>:".
	RunID string `json:"run_id,omitempty"`
	// Redis says which server the numbers come from (empty Mode for a
	// target without Redis, such as an HTTP endpoint).
	Redis RedisInfo `json:"redis"`
	// StartedAt is the wall-clock start (UTC, RFC 3339 in JSON).
	StartedAt time.Time `json:"started_at"`
	// DurationMS is the wall time, ms.
	DurationMS int64 `json:"duration_ms"`
	// Complete is false when the command stopped early; Error then says why.
	Complete bool   `json:"complete"`
	Error    string `json:"error,omitempty"`
	// Notes say what was left out and why; empty when none.
	Notes []string `json:"notes,omitempty"`
	// Repro is the configuration that reproduces the result.
	Repro Repro `json:"repro"`
}

// Repro is the part of a command's configuration that decides what it
// measured, so the same command can make the same numbers (or the same
// counter-example) again. Zero fields were not used by the command.
type Repro struct {
	// Seed seeds the command's random traffic or trials.
	Seed int64 `json:"seed"`
	// Clients is the number of concurrent clients (0: the command has none).
	Clients int `json:"clients,omitempty"`
	// SkewMS is how far off client clocks were set, each way, ms.
	SkewMS float64 `json:"skew_ms,omitempty"`
	// Limits are the limits under test, in order (empty when each
	// scenario's own were used).
	Limits []limit.Limit `json:"limits,omitempty"`
	// TargetSHA256 is the hex SHA-256 of the user's script (--script),
	// empty for a built-in algorithm or an HTTP target.
	TargetSHA256 string `json:"target_sha256,omitempty"`
}

// checkSchema refuses a file written by a newer ratelab, whose fields this
// one would misread; name labels the error (the path).
func checkSchema(data []byte, name string) error {
	var probe struct {
		V int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil // the caller's own unmarshal reports it
	}
	if probe.V > SchemaVersion {
		return fmt.Errorf("reports: %s: schema_version %d is newer than this ratelab reads (%d): use a newer ratelab", name, probe.V, SchemaVersion)
	}
	return nil
}
