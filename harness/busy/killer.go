package busy

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Killer stops, once per run, a script of ratelab's still running after one
// of the run's calls timed out: such a script would leave the user's Redis
// answering BUSY to everyone after ratelab exits. Kill runs in the
// background (Redis answers only after busy-reply-threshold, and a server
// that hangs for another reason never does, so the run must not wait for
// it); Settle waits for it and says what it found.
//
// The zero Killer is ready: ReadThreshold, then Start and Settle. Its
// methods are safe for concurrent use.
type Killer struct {
	// Config is Kill's; ReadThreshold fills Threshold when it is zero.
	Config Config

	mu    sync.Mutex // known's, and Config's after Start
	known bool       // Config.Threshold was read, not assumed
	once  sync.Once
	done  chan struct{} // closed when Kill is over; nil before Start
	found Found
	err   error
}

// ReadThreshold reads c's busy-reply-threshold into k.Config.Threshold
// (Threshold), unless it is already set. Call it while the server
// answers (before the run's calls): a busy server serves no CONFIG GET.
func (k *Killer) ReadThreshold(ctx context.Context, c redis.UniversalClient) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.Config.Threshold != 0 {
		return
	}
	k.Config.Threshold, k.known = Threshold(ctx, c)
}

// Start runs Kill on c once per Killer, in the background, for a call sent
// at sent that timed out after timeout; later calls do nothing. What it
// found is written on progress (nil: nowhere) when it is over: SCRIPT KILL
// sent, another client's script left alone, or a script that cannot be
// killed.
func (k *Killer) Start(ctx context.Context, c redis.UniversalClient, sent time.Time, timeout time.Duration, progress io.Writer) {
	k.once.Do(func() {
		k.mu.Lock()
		cfg, known := k.Config, k.known
		k.done = make(chan struct{})
		done := k.done
		k.mu.Unlock()
		go func() {
			defer close(done)
			found, err := Kill(ctx, c, sent, cfg)
			k.mu.Lock()
			k.found, k.err = found, err
			k.mu.Unlock()
			if progress == nil {
				return
			}
			switch found {
			case Killed:
				fmt.Fprintf(progress, "ratelab: a script ratelab sent ran longer than the call timeout (%s); ratelab sent SCRIPT KILL\n", timeout)
			case Foreign:
				assumed := ""
				if !known {
					assumed = " (assumed: CONFIG GET was refused)"
				}
				fmt.Fprintf(progress, "ratelab: Redis answered BUSY sooner than its busy-reply-threshold (%s%s) after ratelab's call: another client's script is running; ratelab leaves it alone\n", cfg.threshold(), assumed)
			case Unkillable:
				fmt.Fprintf(progress, "ratelab: %v\n", ErrScriptUnkillable)
			}
		}()
	})
}

// Settle waits for Start's Kill, if one started (at most Config.KillWait,
// or the threshold and 2 s), and returns an error wrapping ErrScriptKilled
// when ratelab's script had to be killed, ErrScriptUnkillable when it wrote
// and could not be (the server is left BUSY), ErrForeignBusy when another
// client's script kept Redis busy (left running; also when answeredBusy
// says a call was answered BUSY); nil otherwise. timeout is the calls'
// bound, named in the error.
func (k *Killer) Settle(timeout time.Duration, answeredBusy bool) error {
	k.mu.Lock()
	done := k.done
	k.mu.Unlock()
	found := NotBusy
	if done != nil {
		<-done
		k.mu.Lock()
		found = k.found
		k.mu.Unlock()
	}
	if found == NotBusy && answeredBusy {
		return fmt.Errorf("%w (ratelab's calls were answered BUSY)", ErrForeignBusy)
	}
	return found.Err(timeout)
}
