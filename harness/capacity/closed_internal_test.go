package capacity

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
)

// A cell is measured again when the server closed a connection, whether the
// fill wrapped the error or formatted it into its message.
func TestClosed(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("sliding-log: %w", io.EOF), true},
		{fmt.Errorf("sliding-log: %v", io.EOF), true}, // formatted: only the text says so
		{fmt.Errorf("fill: %w", syscall.ECONNRESET), true},
		{errors.New("sliding-log: READONLY You can't write against a read only replica."), false},
		{errors.New("sliding-log: OOM command not allowed when used memory > 'maxmemory'."), false},
		{errors.New("sliding-log: ERR wrong number of arguments"), false},
	} {
		if got := closed(c.err); got != c.want {
			t.Errorf("closed(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
