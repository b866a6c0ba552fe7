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
