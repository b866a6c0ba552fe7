package harness

import (
	"context"
	"time"
)

// killBusy is called after a call ratelab sent at sent timed out: the
// Runner's busy.Killer stops a script of ratelab's that still runs (once
// per Runner, in the background) and leaves another client's alone.
func (r *Runner) killBusy(ctx context.Context, sent time.Time) {
	r.kill.Start(ctx, r.Redis, sent, r.Timeout, r.Progress)
}

// Settle waits for the probe and SCRIPT KILL that a timed-out call started
// (busy.Killer.Settle) and returns an error wrapping busy.ErrScriptKilled
// when ratelab's script had to be killed, busy.ErrScriptUnkillable when it
// wrote and could not be (the server is left BUSY), busy.ErrForeignBusy
// when another client's script kept Redis busy (left running; also when a
// call was answered BUSY); nil otherwise. Call it once the run is over,
// before the process exits, so that the user's Redis is never left
// answering BUSY by ratelab.
func (r *Runner) Settle() error {
	return r.kill.Settle(r.Timeout, r.guard().Busy())
}
