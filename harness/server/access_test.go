package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/redis/go-redis/v9"
)

// The access probe calls, from a script, every command the algorithms'
// scripts call: with all of ACLCommands it passes; without one of them it
// names that command, and CheckAccess's message names the grant.
func TestAccessProbe(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Open(t)
	admin := rd.Client.(*redis.Client)
	const user, pass = "ratelab-probe", "pw"
	c := redis.NewClient(&redis.Options{Addr: rd.Info.Addr, Username: user, Password: pass, MaxRetries: -1})
	defer c.Close()
	keys := []string{server.KeyPrefix + "probe:{p}:s", server.KeyPrefix + "probe:{p}:z", server.KeyPrefix + "probe:{p}:h"}
	cases := []struct {
		missing string // the command the user lacks; "" for none
		want    string // the command the probe names; "" for a pass
	}{
		{"", ""},
		{"time", "TIME"},
		{"zadd", "ZADD"},
		{"hdel", "HDEL"},
		{"pexpire", "PEXPIRE"},
	}
	for _, tc := range cases {
		if err := redistest.SetACLUser(ctx, admin, user, pass, redistest.Without(server.ACLCommands, tc.missing)); err != nil {
			t.Fatal(err)
		}
		c.Do(ctx, "CLIENT", "KILL", "USER", user)
		res, err := server.AccessProbe.Run(ctx, c, keys).StringSlice()
		switch {
		case err != nil:
			t.Errorf("without %q: %v", tc.missing, err)
		case tc.want == "" && len(res) != 0:
			t.Errorf("with every command: %v, want a pass", res)
		case tc.want != "" && (len(res) != 2 || res[0] != tc.want):
			t.Errorf("without %q: %v, want %s named", tc.missing, res, tc.want)
		case tc.want != "":
			msg := server.AccessError(res[0]+" in a script", errors.New(res[1])).Error()
			if !strings.Contains(msg, "may not run "+tc.want+" in a script") || !strings.Contains(msg, "grant +"+tc.missing+" (") {
				t.Errorf("without %q: %s", tc.missing, msg)
			}
		}
	}
	// with every command, CheckAccess passes and leaves no key behind
	if err := redistest.SetACLUser(ctx, admin, user, pass, server.ACLCommands); err != nil {
		t.Fatal(err)
	}
	if err := server.CheckAccess(ctx, c); err != nil {
		t.Fatal(err)
	}
	all, _ := server.ScanKeys(ctx, admin, server.KeyPrefix)
	for _, k := range all {
		if strings.Contains(k, server.AccessCheckInfix) {
			t.Errorf("CheckAccess left %s", k)
		}
	}
}
