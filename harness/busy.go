package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/harness/server"
)

// A script still running after its call timed out: the Runner stops its
// own with SCRIPT KILL and leaves another client's alone.

// killBusy is called after a call ratelab sent at sent timed out: a
// script of ratelab's still running would leave the user's Redis answering
// BUSY to everyone after ratelab exits, so it is stopped with SCRIPT KILL;
// a script another client was already running when the call was sent is
// left alone (server.KillBusyScript tells them apart). This is done once
// per Runner, in the background (Redis answers only after
// busy-reply-threshold, 5 s by default, and a server that hangs for another
// reason never does, so the run must not wait for it). Settle waits for it.
func (r *Runner) killBusy(ctx context.Context, sent time.Time) {
	r.kill.once.Do(func() {
		r.kill.done = make(chan struct{})
		threshold := r.kill.threshold
		if threshold <= 0 {
			threshold = server.DefaultBusyThreshold
		}
		go func() {
			defer close(r.kill.done)
			found, err := server.KillBusyScript(ctx, r.Redis, sent, threshold)
			r.kill.found, r.kill.err = found, err
			if r.Progress == nil {
				return
			}
			switch found {
			case server.Killed:
				fmt.Fprintf(r.Progress, "ratelab: a script ratelab sent ran longer than the call timeout (%s); ratelab sent SCRIPT KILL\n", r.Timeout)
			case server.Foreign:
				assumed := ""
				if !r.kill.known {
					assumed = " (assumed: CONFIG GET was refused)"
				}
				fmt.Fprintf(r.Progress, "ratelab: Redis answered BUSY sooner than its busy-reply-threshold (%s%s) after ratelab's call: another client's script is running; ratelab leaves it alone\n", threshold, assumed)
			case server.Unkillable:
				fmt.Fprintf(r.Progress, "ratelab: %v\n", server.ErrScriptUnkillable)
			}
		}()
	})
}

// Settle waits for the probe and SCRIPT KILL that a timed-out call started
// (at most server.KillWait, or the busy-reply-threshold and 2 s) and
// returns an error wrapping server.ErrScriptKilled when ratelab's script
// had to be killed, server.ErrScriptUnkillable when it wrote and could not
// be (the server is left BUSY), server.ErrForeignBusy when another client's
// script kept Redis busy (left running; also when a call was answered
// BUSY); nil otherwise. Call it once the run is over, before the process
// exits, so that the user's Redis is never left answering BUSY by ratelab.
func (r *Runner) Settle() error {
	found := server.NotBusy
	if r.kill.done != nil {
		<-r.kill.done
		found = r.kill.found
	}
	if found == server.NotBusy && r.guard().Busy() {
		return fmt.Errorf("%w (ratelab's calls were answered BUSY)", server.ErrForeignBusy)
	}
	return found.Err(r.Timeout)
}
