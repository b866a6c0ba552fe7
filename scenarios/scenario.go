// Package scenarios turns parameters into schedules of arrivals. Pure
// functions: no I/O, no sleeping, no Redis; randomness only from the seed.
//
// The contract scenarios, in run order (see Names and Get):
//
//   - boundary-burst: L requests just before an aligned window boundary and L
//     just after it (seed 001's harness); defaults 50 per 10s.
//   - steady: L/2 evenly spaced requests per window for 5 windows, never more
//     than L in any window; defaults 50 per 10s.
//   - overload: 15L requests at random times over 5 windows; defaults 50 per 10s.
//   - cron-regions: seed 001's 8 regional cron jobs sharing one daily quota key,
//     searches cost 100 and videos 1; defaults 9500 per 24h.
//
// Besides the built-ins, a Scenario can come from a YAML scenario file
// (ParseScenario, LoadScenarioFile; BuiltinYAML gives the built-ins in that
// form), and a Schedule from recorded traffic: a CSV, JSON Lines or access
// log file, plain or gzip, read as a stream (NewTrafficReader, ArrivalStream,
// ReadTrafficSchedule). GenerateAccessLog writes a synthetic access log for
// load tests.
package scenarios

import "time"

// Arrival is one request of a schedule.
type Arrival struct {
	// At is the arrival time relative to the schedule's anchor (an aligned
	// window boundary: the harness maps At=0 to an exact multiple of the
	// window since the Unix epoch); negative before it, zero exactly on it.
	// JSON encodes it in nanoseconds.
	At time.Duration `json:"at"`
	// Key is the rate-limited key, without any run prefix; never empty.
	Key string `json:"key"`
	// Cost is the request's weight in cost units, 1 <= Cost <= Params.Limit
	// (never zero).
	Cost int64 `json:"cost"`
	// Client numbers the simulated client sending it (0-based: 0 is the
	// first, and the only one in single-client scenarios).
	Client int `json:"client"`
}

// Params are the inputs of a scenario.
type Params struct {
	// Limit is the cost units allowed per Window. Zero (or negative) means
	// the scenario's own default (Scenario.Defaults.Limit).
	Limit int64
	// Window is the limit's window length. Zero (or negative) means the
	// scenario's own default (Scenario.Defaults.Window).
	Window time.Duration
	// Seed seeds every random choice (a PCG from math/rand/v2); the same
	// Params give the same Schedule. Zero is an ordinary seed, not "random".
	Seed int64
}

// Schedule is a scenario's output: arrivals sorted by At (stable for equal At).
type Schedule struct {
	// Scenario is the name of the scenario that built it.
	Scenario string
	// Params are the parameters actually used: zero Limit and Window already
	// replaced by the scenario's defaults.
	Params Params
	// Arrivals are sorted by At; empty only for a zero Schedule.
	Arrivals []Arrival
}
