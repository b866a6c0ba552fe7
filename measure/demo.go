package measure

import "time"

// DemoPlan is what `ratelab demo` is about to do, told to its observer
// (demo.Observer) before it parks.
type DemoPlan struct {
	// Algorithms are the registry names, one timeline each; Describe holds
	// each algorithm's own description of its limit, in the same order.
	Algorithms []string
	Describe   []string
	// Limit is the cost units allowed per Window.
	Limit  int64
	Window time.Duration
	// Arrivals are the schedule's requests in order (index = Seq): At is
	// the scheduled offset from Boundary, Cost the request's cost units.
	Arrivals []Event
	// Boundary is the window boundary the bursts straddle, on the Redis
	// server's clock; Offset is that clock minus the local clock.
	Boundary time.Time
	Offset   time.Duration
	// FirstLocal is when the first burst starts, on the local clock.
	FirstLocal time.Time
}

// DemoDecision is one decision of `ratelab demo` as it happens.
type DemoDecision struct {
	// Algorithm indexes DemoPlan.Algorithms.
	Algorithm int
	// Seq indexes DemoPlan.Arrivals; At is the arrival's scheduled
	// offset from the boundary.
	Seq int
	At  time.Duration
	// T is the decision's time from the boundary on the Redis clock (the
	// limiter's DecidedAt); Recv is when its answer arrived, on the Redis
	// clock, from the boundary.
	T, Recv time.Duration
	// Cost is the request's cost units; Allowed the limiter's answer.
	Cost    int64
	Allowed bool
	// Err is the call's error; nil when the limiter answered.
	Err error
}
