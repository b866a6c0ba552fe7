package reports

import (
	"fmt"
	"io"

	"github.com/ratelab/ratelab/measure"
)

// interleavingShown is how many round trips of a race the text report
// lists (verify.json keeps them all, up to its own cap).
const interleavingShown = 64

// writeInterleaving lists a race counter-example's round trips, step by
// step: client, command, reply. Nothing for other counter-examples.
func writeInterleaving(w io.Writer, c *measure.CounterExample) {
	if len(c.Interleaving) == 0 {
		return
	}
	fmt.Fprintf(w, "  interleaving (%s), %d round trips (step, client, command -> reply):\n", c.Schedule, len(c.Interleaving))
	for i, s := range c.Interleaving {
		if i == interleavingShown {
			fmt.Fprintf(w, "    ... %d more in verify.json\n", len(c.Interleaving)-i)
			break
		}
		fmt.Fprintf(w, "    %3d  client %d  %s -> %s\n", s.Step, s.Client, s.Command, s.Reply)
	}
}
