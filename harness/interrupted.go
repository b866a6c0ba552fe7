package harness

import (
	"context"
	"strings"
)

// Interrupted returns err's message as a user should read it after ctx was
// cancelled (Ctrl-C): the context's and the signal's wording ("context
// canceled", "interrupt signal received") is said once as "interrupted".
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
	return msg
}
