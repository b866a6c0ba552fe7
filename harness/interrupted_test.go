package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
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
		// a call the interrupt cut off: said to be the interrupt's doing
		{"cut off", done, errors.New("capacity stopped early: read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"),
			"interrupted: capacity stopped early: read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"},
	} {
		if got := Interrupted(c.ctx, c.err); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSignalExit(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, ExitInterrupted}, {syscall.SIGTERM, ExitTerminated}} {
		ctx, stop := signal.NotifyContext(context.Background(), c.sig)
		if err := syscall.Kill(os.Getpid(), c.sig); err != nil {
			t.Fatal(err)
		}
		<-ctx.Done()
		if got := SignalExit(ctx); got != c.want {
			t.Errorf("%v: got %d, want %d", c.sig, got, c.want)
		}
		stop()
	}
}
