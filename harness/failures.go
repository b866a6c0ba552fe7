package harness

// The runner's failure accounting: failed calls counted (a
// CallsFailedError), what a failed decision counts as (ErrorPolicy), and
// which stops mean that Redis did not answer (Unanswered). The bounds on
// a call, a stall and an outage are the call guard's (harness/callguard).

import (
	"errors"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/callguard"
)

// ErrCallsFailed is wrapped by a *CallsFailedError.
var ErrCallsFailed = errors.New("calls failed")

// CallsFailedError ends a run some of whose calls failed (an outage shorter
// than MaxOutage, OOM, READONLY, a timeout, a connection killed): the
// failed decisions were counted as OnError says, so the figures are not
// the limiter's alone, and the run is not complete.
type CallsFailedError struct {
	// Failed of Calls calls failed; First is the first failure.
	Failed, Calls int64
	First         error
}

func (e *CallsFailedError) Error() string {
	return fmt.Sprintf("%d of %d calls failed (counted as the --on-error policy says, so the figures are not the limiter's alone); the first: %v",
		e.Failed, e.Calls, e.First)
}

func (e *CallsFailedError) Unwrap() error { return ErrCallsFailed }

// countCall counts a call and its failure (err not nil), for Run.
func (r *Runner) countCall(err error) {
	r.failed.mu.Lock()
	defer r.failed.mu.Unlock()
	r.failed.calls++
	if err != nil && !errors.Is(err, algorithms.ErrCostExceedsLimit) {
		r.failed.count++
		if r.failed.first == nil {
			r.failed.first = err
		}
	}
}

// takeFailed returns the calls counted since the last take as a
// *CallsFailedError (nil when none failed) and starts counting afresh.
func (r *Runner) takeFailed() error {
	r.failed.mu.Lock()
	defer r.failed.mu.Unlock()
	calls, count, first := r.failed.calls, r.failed.count, r.failed.first
	r.failed.calls, r.failed.count, r.failed.first = 0, 0, nil
	if count == 0 {
		return nil
	}
	return &CallsFailedError{Failed: count, Calls: calls, First: first}
}

// cleanupTimeout bounds the memory reading and key removal after a run
// (the same rule as Session.CleanupTimeout).
func (r *Runner) cleanupTimeout() time.Duration { return cleanupTimeout(r.Timeout) }

// ErrorPolicy says what a decision that could not be made counts as.
type ErrorPolicy string

const (
	// FailClosed counts a failed call as denied.
	FailClosed ErrorPolicy = "fail-closed"
	// FailOpen counts a failed call as allowed: traffic passes unmetered.
	FailOpen ErrorPolicy = "fail-open"
)

// Unanswered reports whether err stopped a command because its Redis did
// not answer (callguard.ErrOutage, a *callguard.StallError): nothing more
// is asked of that server, not even the memory of the command's keys,
// since each such call would wait out its own bound on a server that is
// not answering.
func Unanswered(err error) bool {
	return errors.Is(err, callguard.ErrOutage) || errors.As(err, new(*callguard.StallError))
}
