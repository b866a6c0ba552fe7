package evict

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ratelab/ratelab/harness/server"
)

// CheckOpen refuses a user's server that evicts with less headroom than
// its Margin, before anything is written to it (Check for an estimate of
// zero): set it as server.Options.BeforeWrite, so that OpenURL runs it
// before its access check writes and before a command opens its
// connections (each holds ~20 KB of the server's memory). It returns nil
// when rd.AllowEviction is set. Errors: an *Error, or the failure to read
// the server's memory.
func CheckOpen(ctx context.Context, rd *server.Redis) error {
	if rd.AllowEviction {
		return nil
	}
	_, err := Check(ctx, rd.Client, rd.Info.Addr, 0)
	return err
}

// Start keeps a command that may write up to estimate bytes (negative:
// unknown) to rd from making it evict keys that are not ratelab's. On a
// server ratelab started (rd.Owned) it does nothing. Else it reads the
// memory of rd's servers (Check) and, where a server evicts and the
// estimate does not fit its headroom less its margin, returns the *Error:
// the command must not start. Otherwise it watches them (Watch, as cfg
// says) until ctx ends or stop is called, and calls onEvict once with the
// *Error (Stopped) of a server that evicted or ran low.
//
// With rd.AllowEviction nothing is refused or watched: a warning goes to
// progress (nil: none) when a server could evict. stop waits for the watch
// to end; safe to call twice.
func Start(ctx context.Context, rd *server.Redis, estimate int64, cfg Config, progress io.Writer, onEvict func(*Error)) (stop func(), err error) {
	none := func() {}
	if rd.Owned() {
		return none, nil
	}
	ms, err := Check(ctx, rd.Client, rd.Info.Addr, estimate)
	var ee *Error
	switch {
	case rd.AllowEviction && errors.As(err, &ee):
		if progress != nil {
			fmt.Fprintf(progress, "ratelab: warning: --allow-eviction: Redis at %s evicts (maxmemory-policy %s, %s headroom) and this command may write up to %s: other keys may be evicted, and the command will not stop for it\n",
				ee.Addr, ee.Policy, FormatBytes(ee.Headroom), EstimateText(estimate))
		}
		return none, nil
	case rd.AllowEviction:
		return none, nil
	case err != nil:
		return none, err
	}
	return Watch(ctx, rd.Client, rd.Info.Addr, ms, cfg, onEvict), nil
}
