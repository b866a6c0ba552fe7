package harness

// The runner's failure accounting: failed calls counted and bounded (a
// CallsFailedError), a stall longer than the adaptive bound (a StallError),
// an outage longer than MaxOutage, and what a failed decision counts as
// (ErrorPolicy).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/server"
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

// StallFloor and StallFactor shape the adapted call bound of a
// virtual-time run (Runner.AdaptTimeout): max(Timeout, StallFloor,
// StallFactor x the typical round trip, a moving average (weight 1/16)
// of those seen, so that one stall does not raise it much).
const (
	StallFloor  = 2 * time.Second
	StallFactor = 50
)

// StallError stops a virtual-time command whose Redis did not answer a
// call within its bound: stopped (SIGSTOP), swapping, or hung. Its calls
// are not counted as decisions.
type StallError struct {
	// Bound is how long the call was waited for: its bound, or the
	// client's read timeout when that came first.
	Bound time.Duration
	// Err is the call's own error (an i/o timeout).
	Err error
}

func (e *StallError) Error() string {
	return fmt.Sprintf("Redis did not answer a call within %s (stopped, swapping or hung): a virtual-time command waits for slow calls but not for this long (--timeout sets the bound); no figures from a stalled run", e.Bound.Round(time.Millisecond))
}

func (e *StallError) Unwrap() error { return e.Err }

// StallBound is the bound of a virtual-time round trip of n calls, after
// the round trips seen so far: Timeout per pipelineTimeoutCalls calls,
// raised with AdaptTimeout to StallFloor and StallFactor x the typical
// round trip. Zero: no bound.
func (r *Runner) StallBound(n int) time.Duration {
	k := time.Duration((max(n, 1) + pipelineTimeoutCalls - 1) / pipelineTimeoutCalls)
	b := r.Timeout * k
	if r.AdaptTimeout && r.Timeout > 0 {
		b = max(b, StallFloor, StallFactor*time.Duration(r.typical.Load()))
	}
	return b
}

// noteRoundTrip folds a successful round trip into the typical one
// (AdaptTimeout).
func (r *Runner) noteRoundTrip(d time.Duration) {
	for {
		old := r.typical.Load()
		next := old + (int64(d)-old)/16
		if old == 0 {
			next = int64(d)
		}
		if r.typical.CompareAndSwap(old, next) {
			return
		}
	}
}

// stalled is the error that stops a virtual-time run whose call, bounded
// by bound, failed with err after waiting waited: a *StallError for a
// timeout (nil else).
func (r *Runner) stalled(err error, bound, waited time.Duration) error {
	if err == nil || bound <= 0 || r.Clock == RedisClock || r.Clock == ClientClock || !server.IsTimeout(err) {
		return nil
	}
	return &StallError{Bound: min(bound, waited), Err: err}
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

// ErrOutage is the cause of a run stopped because Redis kept failing for
// longer than Runner.MaxOutage.
//
//lint:ignore ST1005 Redis is a proper noun, and the README and the CLI's tests quote this message
var ErrOutage = errors.New("Redis kept failing")

// Unanswered reports whether err stopped a command because its Redis did
// not answer (ErrOutage, a *StallError): nothing more is asked of that
// server, not even the memory of the command's keys, since each such
// call would wait out its own bound on a server that is not answering.
func Unanswered(err error) bool {
	return errors.Is(err, ErrOutage) || errors.As(err, new(*StallError))
}

// noteCall tracks runs of failures; it cancels the run when one lasts
// longer than MaxOutage.
func (r *Runner) noteCall(err error, cancel context.CancelCauseFunc) {
	if r.MaxOutage <= 0 {
		return
	}
	r.outage.mu.Lock()
	defer r.outage.mu.Unlock()
	if err == nil {
		r.outage.since = time.Time{}
		return
	}
	now := time.Now()
	if r.outage.since.IsZero() {
		r.outage.since = now
		return
	}
	if d := now.Sub(r.outage.since); d >= r.MaxOutage {
		cancel(fmt.Errorf("%w for %s (last error: %v)", ErrOutage, d.Round(time.Millisecond), err))
	}
}
