package server

import "context"

// AccessProbe and AccessError are CheckAccess's probe script and message.
var (
	AccessProbe = accessProbe
	AccessError = accessError
)

// ResetAbort forgets every AbortCalls, for the tests of the abort: after
// one, every call of a tracked client in this process is cut off.
func ResetAbort() {
	abortedAt.Store(0)
	graceOver.Lock()
	defer graceOver.Unlock()
	graceOver.cancel()
	graceOver.ctx, graceOver.cancel = context.WithCancel(context.Background())
	graceOver.armed = false
}
