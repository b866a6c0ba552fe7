package main

import (
	"context"
	"strings"
	"testing"
)

// A function library verified on the user's own Redis: loaded under
// ratelab's own names, so the user's library of the same name (and its
// function of the same name) is left byte-identical (FUNCTION DUMP before
// and after), and nothing of ratelab's is left (libraries, keys, ACL
// user). A library that does not load stops verify with exit 2, the file
// and line and Redis's message, before any call.
func TestFunctionOnUsersRedis(t *testing.T) {
	t.Parallel()
	v := startVictim(t)
	c := v.client(t)
	ctx := context.Background()
	url := "redis://" + v.addr
	// the user's own library: the twin's library name and function name
	mine := "#!lua name=ratelimit_log\nredis.register_function('sliding_log', function(keys, args) return 42 end)\n"
	if err := c.FunctionLoad(ctx, mine).Err(); err != nil {
		t.Fatal(err)
	}
	before, err := c.FunctionDump(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// the library's one function, without --fcall
	code, stdout, stderr := ratelab(t, "verify", "--redis", url, "--function", "../../harness/verify/testdata/fn-sliding-log.lua",
		"--arg", "{limit}", "--arg", "{window_s}", "--arg", "{request_id}", "--limit", "5", "--window", "1s", "--budget", "0")
	if code != 0 || !strings.Contains(stdout, "HOLDS") {
		t.Fatalf("verify: exit %d, stdout %s, stderr %s; want 0 and HOLDS", code, stdout, stderr)
	}
	broken := "testdata/functions/broken.lua"
	code, _, stderr = ratelab(t, "verify", "--redis", url, "--function", broken, "--limit", "5", "--window", "1s")
	if code != exitUsage || !strings.Contains(stderr, "--function: "+broken+":4: the library does not load (FUNCTION LOAD): ERR Error compiling function: user_function:4:") {
		t.Errorf("broken library: exit %d, stderr %s; want 2 naming the file, line 4 and Redis's message", code, stderr)
	}
	after, err := c.FunctionDump(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Error("FUNCTION DUMP differs after the verify: the user's libraries changed")
	}
	if got, err := c.FCall(ctx, "sliding_log", nil).Result(); err != nil || got != int64(42) {
		t.Errorf("the user's sliding_log answers %v, %v; want 42", got, err)
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys left", n)
	}
	if users := c.Do(ctx, "ACL", "USERS").String(); strings.Contains(users, "ratelab") {
		t.Errorf("ACL users left: %s", users)
	}
}
