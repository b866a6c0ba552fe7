package guard_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// Under the guard a script cannot list the server's keys (SCAN, KEYS,
// RANDOMKEY: an ACL key pattern does not cover them), nor change the
// server's Functions or scripts; the refusal names the command. ratelab's
// own SCAN of the run's keys still works on the guarded client.
func TestGuardKeepsKeyNamesAndFunctions(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Open(t)
	c := rd.Client
	if err := c.Set(ctx, "app:session:4f2a", "alice", 0).Err(); err != nil {
		t.Fatal(err)
	}
	prefix := "ratelab:20261123T090000-5ca4:"
	g, err := guard.NewACL(ctx, rd, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close(ctx) }()
	own := prefix + "{k}"
	for _, tc := range []struct{ name, script string }{
		{"SCAN", "return redis.call('SCAN', '0')[2]"},
		{"KEYS", "return redis.call('KEYS', '*')"},
		{"RANDOMKEY", "return redis.call('RANDOMKEY')"},
		{"SCAN", "return redis.pcall('SCAN', '0', 'MATCH', 'ratelab:*')"},
	} {
		err := g.Client.Eval(ctx, tc.script, []string{own}).Err()
		if !guard.IsRefusal(err) || !strings.Contains(err.Error(), "it called "+tc.name) || strings.Contains(err.Error(), "app:") {
			t.Errorf("%s in a script: %v, want the guard's refusal naming it", tc.name, err)
		}
	}
	// sent directly, as a client-side script's calls are
	for _, cmd := range [][]any{
		{"SCAN", "0"}, {"RANDOMKEY"}, {"FUNCTION", "FLUSH"}, {"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() return 1 end)"},
		{"SCRIPT", "FLUSH"}, {"SCRIPT", "KILL"}, {"SCAN", "0", "MATCH", "app:*"}, {"SCAN", "0", "MATCH", prefix + "*", "MATCH", "*"},
	} {
		if err := g.Client.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%v on the guarded connection: %v, want NOPERM", cmd, err)
		}
	}
	if err := g.Client.Set(ctx, own, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	keys, err := server.ScanKeys(ctx, g.Client, prefix)
	if err != nil || !slices.Equal(keys, []string{own}) {
		t.Errorf("ScanKeys of the run's prefix on the guarded client: %v, %v; want [%s]", keys, err, own)
	}
	if err := g.Client.ScriptLoad(ctx, "return 1").Err(); err != nil {
		t.Errorf("SCRIPT LOAD under the guard: %v", err)
	}
}
