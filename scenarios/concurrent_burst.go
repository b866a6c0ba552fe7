package scenarios

// ConcurrentBurstClients is how many clients concurrent-burst sends from.
const ConcurrentBurstClients = 8

func init() {
	// named on request (ratelab run --scenarios concurrent-burst), not
	// among the defaults of Names
	registry["concurrent-burst"] = Scenario{
		Name: "concurrent-burst",
		Description: "2L requests from 8 clients at one instant (seeds 000 and 001's race): an atomic script accepts L, " +
			"a limiter sent as separate commands from the client accepts more",
		Defaults: shortDefaults,
		Build:    concurrentBurst,
	}
}

// concurrentBurst is 2L cost-1 requests on UserKey at W/2, dealt to
// ConcurrentBurstClients clients in turn (request i from client i mod 8):
// every client sends its requests one after another, all at the same
// instant. An atomic limiter accepts exactly L; one whose check and write
// are separate round trips accepts more when the clients' commands
// interleave (the harness interleaves them deterministically).
func concurrentBurst(p Params) Schedule {
	p = withDefaults(p, shortDefaults)
	at := p.Window / 2
	var arr []Arrival
	for i := range 2 * p.Limit {
		arr = append(arr, Arrival{At: at, Key: UserKey, Cost: 1, Client: int(i % ConcurrentBurstClients)})
	}
	return Schedule{Scenario: "concurrent-burst", Params: p, Arrivals: arr}
}
