package harness

import (
	"context"
	"strings"
	"syscall"
)

// Interrupted returns err's message as a user should read it after ctx was
// cancelled (Ctrl-C): the context's and the signal's wording ("context
// canceled", "interrupt signal received") is said once as "interrupted",
// and a message that does not say so (a call cut off by the interrupt
// fails with "i/o timeout") starts with "interrupted: ".
// While ctx is live, or when err is nil, it is err's message unchanged ("").
func Interrupted(ctx context.Context, err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if ctx.Err() == nil {
		return msg
	}
	msg = strings.ReplaceAll(msg, context.Canceled.Error(), "interrupted")
	msg = strings.ReplaceAll(msg, context.Cause(ctx).Error(), "interrupted")
	for strings.Contains(msg, "interrupted: interrupted") {
		msg = strings.ReplaceAll(msg, "interrupted: interrupted", "interrupted")
	}
	if !strings.Contains(msg, "interrupted") {
		msg = "interrupted: " + msg
	}
	return msg
}

// Exit codes of a command that a signal stopped, as shells report it:
// 128 + the signal's number.
const (
	ExitInterrupted = 130 // Ctrl-C (SIGINT)
	ExitTerminated  = 143 // SIGTERM
)

// SignalExit is the exit code of a command whose ctx a signal cancelled,
// as signal.NotifyContext's cause names it: ExitTerminated for SIGTERM,
// else ExitInterrupted. ctx must be done (context.Cause is nil otherwise).
func SignalExit(ctx context.Context) int {
	if strings.Contains(context.Cause(ctx).Error(), syscall.SIGTERM.String()) {
		return ExitTerminated
	}
	return ExitInterrupted
}
