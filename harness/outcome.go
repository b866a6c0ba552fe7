package harness

import (
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

// Outcome is the measured answer to one arrival: the limiter's answer
// (algorithms.Decision) with what the runner saw around it (the arrival,
// when the call went and came back, its error). Its Record is the line of
// decisions.jsonl it becomes.
type Outcome struct {
	// Seq is the arrival's index in its schedule.
	Seq     int
	Arrival scenarios.Arrival
	// Sent and Recv bracket the call on the local clock.
	Sent, Recv time.Time
	// Decision is the limiter's answer; for an errored call only DecidedAt
	// is set (to the scheduled time).
	Decision algorithms.Decision
	Err      error
}

// Record is o as one line of decisions.jsonl, for the given algorithm
// (registry name) and scenario: times in Unix µs, At as µs from the anchor,
// the error's text.
func (o Outcome) Record(algorithm, scenario string) measure.Record {
	a := o.Arrival
	rec := measure.Record{
		Algorithm: algorithm, Scenario: scenario,
		Seq: o.Seq, Client: a.Client, Key: a.Key, Cost: a.Cost,
		AtUS:   a.At.Microseconds(),
		SentUS: o.Sent.UnixMicro(), RecvUS: o.Recv.UnixMicro(),
		DecidedAtUS: o.Decision.DecidedAt.UnixMicro(), Allowed: o.Decision.Allowed,
		Remaining: o.Decision.Remaining, RetryAfterUS: o.Decision.RetryAfter.Microseconds(),
		LatencyUS: o.Recv.Sub(o.Sent).Microseconds(),
	}
	if o.Err != nil {
		rec.Error = o.Err.Error()
	}
	return rec
}
