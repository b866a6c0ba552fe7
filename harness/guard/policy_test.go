package guard_test

import (
	"context"
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// ForScript's policy: no guard on a server ratelab started or
// for a trusted script; a guard for a script sent through the limiter on
// the user's Redis; a refusal, naming the field "script", for a command
// that cannot guard.
func TestForScript(t *testing.T) {
	ctx := context.Background()
	own := redistest.Open(t)
	users := &server.Redis{Client: own.Client, Info: own.Info}
	users.Info.Mode = "url" // the same server, as if given by URL
	cases := []struct {
		name              string
		rd                *server.Redis
		trust, viaLimiter bool
		guard             bool   // a Guard returned
		field             string // the error's field; "" for none
	}{
		{"ratelab's own server", own, false, false, false, ""},
		{"a trusted script", users, true, false, false, ""},
		{"through the limiter", users, false, true, true, ""},
		{"pipelined on the user's Redis", users, false, false, false, "script"},
	}
	for _, c := range cases {
		g, err := guard.ForScript(ctx, c.rd, "20261123T090000-abcd", c.trust, c.viaLimiter)
		name, _ := field.Name(err)
		if (g != nil) != c.guard || name != c.field || (err == nil) != (c.field == "") {
			t.Errorf("%s: guard %v, error %v; want guard %v, field %q", c.name, g != nil, err, c.guard, c.field)
		}
		if g != nil {
			if err := g.Close(ctx); err != nil {
				t.Errorf("%s: Close: %v", c.name, err)
			}
		}
	}
	if server.Started(users) || !server.Started(own) {
		t.Errorf("Started: the user's %v, ratelab's %v", server.Started(users), server.Started(own))
	}
}
