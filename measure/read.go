package measure

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ratelab/ratelab/internal/input"
)

// ReadResults reads a results.json written by ratelab (or by WriteDir).
// A file that cannot be read, is not JSON, or has no "results" array is an
// error naming path.
func ReadResults(path string) (*Results, error) {
	data, err := input.ReadFile(path, input.MaxResults)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	return ParseResults(data, path)
}

// ParseResults parses the bytes of a results.json; name labels errors (the
// path). Every string read is made fit for a terminal (input.Clean). Anything that is not a JSON object with a "results" array of rows
// is an error, never a panic.
func ParseResults(data []byte, name string) (*Results, error) {
	var probe struct {
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("reports: %s: not a ratelab results.json (invalid JSON: %w)", name, err)
	}
	if raw := bytes.TrimSpace(probe.Results); len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf(`reports: %s: not a ratelab results.json (no "results" array)`, name)
	}
	if err := checkSchema(data, name); err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reports: %s: %w", name, err)
	}
	input.CleanStrings(&r) // no terminal control from a forged file reaches a renderer
	for i, row := range r.Results {
		if row.Algorithm == "" || row.Scenario == "" {
			return nil, rowError(name, r.Command, i, "algorithm and scenario")
		}
	}
	return &r, nil
}

// ReadBench reads a results.json written by `ratelab bench`.
func ReadBench(path string) (*BenchResults, error) {
	var r BenchResults
	if err := readResultsAs(path, "bench", &r); err != nil {
		return nil, err
	}
	for i, row := range r.Results {
		if row.Algorithm == "" || row.Path == "" {
			return nil, rowError(path, "bench", i, "algorithm and path")
		}
	}
	return &r, nil
}

// ReadCapacity reads a results.json written by `ratelab capacity`.
func ReadCapacity(path string) (*CapacityResults, error) {
	var r CapacityResults
	if err := readResultsAs(path, "capacity", &r); err != nil {
		return nil, err
	}
	for i, row := range r.Results {
		if row.Algorithm == "" || row.Limit < 1 {
			return nil, rowError(path, "capacity", i, "algorithm and limit")
		}
	}
	return &r, nil
}

// ResultsCommand returns the "command" of a results.json ("run",
// "capacity", "bench"; "run" when the file has none). A file that cannot be
// read or has no "results" array is an error naming path.
func ResultsCommand(path string) (string, error) {
	data, err := input.ReadFile(path, input.MaxResults)
	if err != nil {
		return "", fmt.Errorf("reports: %w", err)
	}
	var probe struct {
		Command string          `json:"command"`
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return "", fmt.Errorf("reports: %s: not a ratelab results.json (invalid JSON: %w)", path, err)
	}
	if raw := bytes.TrimSpace(probe.Results); len(raw) == 0 || raw[0] != '[' {
		return "", fmt.Errorf(`reports: %s: not a ratelab results.json (no "results" array)`, path)
	}
	if probe.Command == "" {
		return "run", nil
	}
	return probe.Command, nil
}

func readResultsAs(path, command string, v any) error {
	got, err := ResultsCommand(path)
	if err != nil {
		return err
	}
	if got != command {
		return fmt.Errorf("reports: %s: results of `ratelab %s`, not of `ratelab %s`", path, got, command)
	}
	data, err := input.ReadFile(path, input.MaxResults)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := checkSchema(data, path); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("reports: %s: %w", path, err)
	}
	input.CleanStrings(v) // no terminal control from a forged file reaches a renderer
	return nil
}

// ReadVerify reads a verify.json written by `ratelab verify --out`, of the
// current shape or the previous one (see VerifyReport.UnmarshalJSON). A
// file that cannot be read, is not JSON, has no "families" array or comes
// from a newer ratelab is an error naming path; so is one whose
// counter-example's trace holds more than MaxTraceRequests requests
// (wrapping ErrTraceTooLong), refused as the count passes the bound,
// before the rest of the file is read and before any of it is decoded.
func ReadVerify(path string) (*VerifyReport, error) {
	data, err := input.ReadFileChecked(path, input.MaxResults, checkCounts)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	var probe struct {
		Families json.RawMessage `json:"families"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("reports: %s: not a ratelab verify.json (invalid JSON: %w)", path, err)
	}
	if raw := bytes.TrimSpace(probe.Families); len(raw) == 0 || (raw[0] != '[' && string(raw) != "null") {
		return nil, fmt.Errorf(`reports: %s: not a ratelab verify.json (no "families" array)`, path)
	}
	if err := checkSchema(data, path); err != nil {
		return nil, err
	}
	var r VerifyReport
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reports: %s: %w", path, err)
	}
	input.CleanStrings(&r) // no terminal control from a forged file reaches a renderer
	return &r, nil
}

// UnmarshalJSON reads a verify.json of either shape: the current one
// (schema_version set, "complete") or the previous one (no
// schema_version, "incomplete": true when the verification stopped early,
// absent when it finished), so Complete means the same in both. A report
// of the previous shape is upgraded: its SchemaVersion is set, so writing
// it again keeps what Complete says.
func (r *VerifyReport) UnmarshalJSON(data []byte) error {
	type plain VerifyReport // without this method
	var v struct {
		plain
		Incomplete *bool `json:"incomplete"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = VerifyReport(v.plain)
	if r.SchemaVersion == 0 {
		r.Complete = v.Incomplete == nil || !*v.Incomplete
		r.SchemaVersion = SchemaVersion
	}
	return nil
}

// UnmarshalJSON reads a bench row of the current shape or of the previous
// one, whose VsRedisBenchmark was keyed "ratio"; the current key wins when
// both are present.
func (r *BenchRow) UnmarshalJSON(data []byte) error {
	type plain BenchRow // without this method
	var v struct {
		plain
		Ratio float64 `json:"ratio"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = BenchRow(v.plain)
	if r.VsRedisBenchmark == 0 {
		r.VsRedisBenchmark = v.Ratio
	}
	return nil
}

// rowError says that row i of a results.json is not a row of the command
// the file names (a run's rows in a file that says capacity, say), which
// would otherwise render as a table of zeros.
func rowError(name, command string, i int, want string) error {
	if command == "" {
		command = "run"
	}
	return fmt.Errorf("reports: %s: results[%d] is not a row of `ratelab %s` (it has no %s): the file's rows do not match its \"command\"", name, i, command, want)
}
