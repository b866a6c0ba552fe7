package guard

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/targets"
)

// Probe refuses a script that writes and then loops (it would wedge the
// user's Redis), naming it; a well-behaved script and a built-in pass. The
// calls are bounded by 200 ms instead of ProbeBound: the loop is found as
// surely, sooner.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	script := func(name, src string) targets.Spec {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		specs, err := targets.Load(targets.Given{Scripts: []string{p}, BesideBuiltins: true})
		if err != nil {
			t.Fatal(err)
		}
		return specs[0]
	}
	function := func(name, src string) targets.Spec {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		specs, err := targets.Load(targets.Given{Function: p, BesideBuiltins: true})
		if err != nil {
			t.Fatal(err)
		}
		return specs[0]
	}
	for _, tc := range []struct {
		name   string
		spec   targets.Spec
		refuse bool
	}{
		{"writes then loops", script("wedge.lua", "local n = redis.call('INCR', KEYS[1])\nif n >= 2 then while true do end end\nreturn 1\n"), true},
		{"well-behaved", script("good.lua", "local n = redis.call('INCR', KEYS[1])\nredis.call('PEXPIRE', KEYS[1], 1000)\nif n <= 10 then return 1 end\nreturn 0\n"), false},
		{"built-in", targets.Spec{Algorithm: "fixed-window"}, false},
		{"function writes then loops", function("wedge-fn.lua", "#!lua name=wedge\nredis.register_function('w', function(keys, args)\nlocal n = redis.call('INCR', keys[1])\nif n >= 2 then while true do end end\nreturn 1 end)\n"), true},
	} {
		var stderr bytes.Buffer
		err := ProbeWith(context.Background(), []targets.Spec{tc.spec}, ProbeConfig{Bound: 200 * time.Millisecond}, &stderr)
		var refused *RefusedError
		switch {
		case tc.refuse && (!errors.As(err, &refused) || refused.Name != tc.spec.Name):
			t.Errorf("%s: got %v, want a RefusedError naming %s", tc.name, err, tc.spec.Name)
		case tc.refuse:
			if name, _ := field.Name(err); name != "script" {
				t.Errorf("%s: %v names %q, want the field script", tc.name, err, name)
			}
		case err != nil:
			t.Errorf("%s: %v (stderr %s)", tc.name, err, stderr.String())
		}
	}
}

// The nil guard: the caller's connection, for every target, and a Close
// that does nothing; Open without a script guards nothing.
func TestNoGuard(t *testing.T) {
	var g *Scripts
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	if got := g.On(rdb, targets.Spec{Script: "x.lua"}); got != rdb {
		t.Errorf("nil guard: On = %v, want the caller's connection", got)
	}
	g.Close()
	rd, g, mode, err := Open(context.Background(), nil, []targets.Spec{{Algorithm: "fixed-window"}}, "run", false, true, nil)
	if rd != nil || g != nil || mode != Unguarded || err != nil {
		t.Errorf("Open without a script: %v %v %v %v", rd, g, mode, err)
	}
}

// The zero Scripts, as the nil one, is no guard: On gives the caller's
// connection, Close does nothing.
func TestZeroScripts(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer func() { _ = rdb.Close() }()
	spec := targets.Spec{Name: "mine.lua", Script: "mine.lua"}
	var zero Scripts
	if got := zero.On(rdb, spec); got != rdb {
		t.Errorf("zero Scripts: On gave %v, want the caller's connection", got)
	}
	zero.Close()
	var none *Scripts
	if got := none.On(rdb, spec); got != rdb {
		t.Errorf("nil Scripts: On gave %v, want the caller's connection", got)
	}
}

// A script (or set-up script) that does not compile is refused before any
// call, as a *targets.SpecError naming the field and the file, with
// Redis's message; Open refuses it too, on a Redis ratelab started (no
// guard there). One that compiles is loaded and nothing is said; a
// client-side script is not Redis's to compile.
func TestCompiles(t *testing.T) {
	srv := redistest.Start()
	defer srv.Close()
	ctx := context.Background()
	good := targets.Spec{Name: "good.lua", Script: "good.lua", Source: "return 1\n"}
	bad := targets.Spec{Name: "bad.lua", Script: "bad.lua", Source: "return 1 +\n"}
	badSetup := good
	badSetup.Setup, badSetup.SetupSource = "setup.lua", "redis.call(\n"
	clientSide := bad
	clientSide.ClientSide = true
	builtin := targets.Spec{Algorithm: "fixed-window"}
	for _, tc := range []struct {
		name  string
		specs []targets.Spec
		field string // "" when it compiles
		file  string
	}{
		{"compiles", []targets.Spec{builtin, good}, "", ""},
		{"does not compile", []targets.Spec{good, bad}, "script", "bad.lua"},
		{"set-up does not compile", []targets.Spec{badSetup}, "setup", "setup.lua"},
		{"client-side", []targets.Spec{clientSide}, "", ""},
	} {
		for _, open := range []bool{false, true} {
			var err error
			if open {
				_, _, _, err = Open(ctx, srv.Redis, tc.specs, "run", false, true, nil)
			} else {
				err = Compiles(ctx, srv.Client(), tc.specs)
			}
			var se *targets.SpecError
			name, _ := field.Name(err)
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("%s (Open %v): %v", tc.name, open, err)
			case tc.field == "":
			case !errors.As(err, &se) || name != tc.field:
				t.Errorf("%s (Open %v): %v (field %q), want a *targets.SpecError naming %q", tc.name, open, err, name, tc.field)
			case !strings.Contains(err.Error(), tc.file+" does not compile: ERR Error compiling script"):
				t.Errorf("%s (Open %v): %q does not name %s and Redis's message", tc.name, open, err, tc.file)
			}
		}
	}
	if sha, err := srv.Client().ScriptExists(ctx, targets.ScriptSHA1(good.Source)).Result(); err != nil || !sha[0] {
		t.Errorf("the script that compiles was not loaded: %v %v", sha, err)
	}
}
