package testenv

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// outcome records how Tool ended a test: Skip and Fatal stop the goroutine
// as the testing package's do.
type outcome struct {
	testing.TB
	skipped, failed string
}

func (o *outcome) Helper()           {}
func (o *outcome) Skip(args ...any)  { o.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (o *outcome) Fatal(args ...any) { o.failed = fmt.Sprint(args...); runtime.Goexit() }

func TestTool(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		require string // RATELAB_REQUIRE_TOOLS
		names   []string
		want    string // the path, "skip" or "fail"
	}{
		{"on PATH", "", []string{"ratelab-no-such-tool", "sh"}, sh},
		{"by path", "1", []string{"/ratelab/no/such/tool", sh}, sh},
		// a directory is not the program
		{"missing: skipped", "", []string{"ratelab-no-such-tool", "/"}, "skip"},
		{"missing: skipped unless 1", "yes", []string{"ratelab-no-such-tool"}, "skip"},
		{"missing under make test: failed", "1", []string{"ratelab-no-such-tool"}, "fail"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(RequireEnv, c.require)
			o := &outcome{TB: t}
			var got string
			done := make(chan struct{})
			go func() {
				defer close(done)
				got = Tool(o, "tool", c.names...)
			}()
			<-done
			switch {
			case o.skipped != "":
				got = "skip"
			case o.failed != "":
				got = "fail"
			}
			if got != c.want {
				t.Fatalf("Tool(%v) with %s=%q: %q, want %q (skip %q, fail %q)", c.names, RequireEnv, c.require, got, c.want, o.skipped, o.failed)
			}
			if msg := o.skipped + o.failed; msg != "" && !strings.Contains(msg, "`make tool` installs it") {
				t.Errorf("message %q does not say how to install the tool", msg)
			}
		})
	}
}
