package measure

// RoundTrip is one round trip of a race counter-example's interleaving (a
// client-side limiter's commands from several clients, in the order the
// scheduler let them reach Redis).
type RoundTrip struct {
	// Step counts the round trips of the trial from 1.
	Step int `json:"step"`
	// Client is the simulated client that sent it (0-based).
	Client int `json:"client"`
	// Command is what was sent: "ZCARD key", or for a pipeline or a
	// transaction "PIPELINE: INCRBY key 1; PEXPIRE key 60000".
	Command string `json:"command"`
	// Reply is Redis's answer as the script saw it: "19", "nil", "OK",
	// "[1 60000]", "(error) ...", "aborted" (an EXEC a WATCHed key undid).
	Reply string `json:"reply"`
}
