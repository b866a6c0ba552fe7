package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestInterrupted(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupt signal received"))
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		// a live context: the message as it is
		{"live", live, fmt.Errorf("run: %w", context.Canceled), "run: context canceled"},
		// cancelled: both wordings said once
		{"cancelled", done, fmt.Errorf("run: %w: %w", context.Canceled, context.Cause(done)), "run: interrupted"},
		{"nil", done, nil, ""},
	} {
		if got := Interrupted(c.ctx, c.err); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
