// Package harness is the engine every study runs on: it runs arrivals
// (scenarios.Arrival) against an algorithms.Limiter and measures it.
// A Job takes its arrivals one way, a sequence read once (Job.Arrivals;
// WithSchedule for a scenarios.Schedule), and gives its outcomes one way,
// to its Sink (a Collector keeps them). A Runner sends the arrivals in
// virtual time (exact injected timestamps, pipelined where the limiter is
// a script, with the virtual key expiry of expiry.go) or in real time (on
// Redis TIME or the harness's wall clock; the words are
// algorithms.Clock's): Execute runs several jobs, Run also summarizes them
// into measure.Rows, Drive runs one job's stream one call or round trip at
// a time (a replay, a fill), Adaptive one whose arrivals follow the
// answers; all on the same calls and call guard. A Session
// is one command's run id, key prefix, registration, cleanup and results
// header, and its Guard keeps the command from making the user's Redis
// evict keys that are not ratelab's.
//
// The studies live beside it, one package each with a Config, its
// Validate and WithDefaults, and a Run: harness/run (scenarios),
// harness/replay (traffic files), harness/demo, harness/verify,
// harness/capacity and harness/bench. What a user drives (built-ins,
// scripts, HTTP endpoints) is built by package targets; Redis itself is
// reached through harness/server and harness/engine.
package harness
