package custom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/limit"
)

// A set-up script runs once per key, before the key's first call, with the
// same KEYS and ARGV; the script's own errors keep their line numbers.
func TestScriptSetup(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Second}
	main := "#!lua\nlocal n = redis.call('INCR', KEYS[1] .. ':calls')\nif ARGV[1] == 'fail' then return redis.call('NOSUCH') end\nreturn {n, redis.call('GET', KEYS[1] .. ':setups')}"
	setup := "redis.call('INCR', KEYS[1] .. ':setups')\nreturn 'ignored'"
	lim, err := custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "counts", Source: main, Setup: setup,
		Args: []string{"{key}"}, Allowed: mustPredicate(t, "reply[1] >= 1"), Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	at := algorithms.At(time.Unix(1_800_000_000, 0))
	for _, key := range []string{"{setup-a}", "{setup-b}"} {
		for range 3 {
			if _, err := lim.Allow(ctx, key, 1, at); err != nil {
				t.Fatal(err)
			}
		}
		n, err := srv.Client().Get(ctx, key+":setups").Int()
		if err != nil || n != 1 {
			t.Errorf("%s: set-up ran %d times (%v), want once", key, n, err)
		}
		calls, _ := srv.Client().Get(ctx, key+":calls").Int()
		if calls != 3 {
			t.Errorf("%s: %d calls, want 3", key, calls)
		}
	}
	// the error of line 3 of the script is reported at line 3, also in
	// the first call, which runs the set-up too
	failing, err := custom.NewScript(srv.Client(), custom.ScriptConfig{Name: "fails", Source: main, Setup: setup,
		Args: []string{"fail"}, Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	_, err = failing.Allow(ctx, "{setup-c}", 1, at)
	if err == nil || !strings.Contains(err.Error(), "user_script:3") {
		t.Errorf("error %v, want it at line 3 of the script", err)
	}
	srv.Client().Del(ctx, "{setup-a}:calls", "{setup-a}:setups", "{setup-b}:calls", "{setup-b}:setups", "{setup-c}:calls", "{setup-c}:setups")
}
