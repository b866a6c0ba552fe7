// Package measure is ratelab's plain result data and the contract metrics:
// the exact window maximum (MaxInWindow) and the sliding-log oracle (Ideal)
// of DESIGN.md, the rows and reports every command writes to results.json
// (Results, BenchResults, CapacityResults, VerifyReport, typed Verdicts),
// each with the one Header that says how it was made (schema_version,
// versions, run id, Redis, start, complete, Repro), the decisions.jsonl
// record stream (Record, DecisionLog) and the readers of results.json and
// verify.json (this shape and the one before it).
//
// It knows no Redis and no Docker: reports render its values, and any Go
// program can read a results directory with it. Times in JSON are integers
// in the unit their name ends with (_us, _ms); bytes end in _bytes.
package measure
