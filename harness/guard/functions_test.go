package guard

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// A function target's libraries are loaded by Open under the run's names,
// its target built from Targets made before Open (as run makes them) calls
// them, and Close deletes them; a library that does not load is refused
// with the file, the line and Redis's message, and nothing is left.
func TestFunctions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rd := redistest.Open(t)
	c := rd.Client
	names := func() []string {
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range libs {
			out = append(out, l.Name)
		}
		return out
	}
	specs, err := targets.Load(targets.Given{Function: "../verify/testdata/fn-fixed-window.lua", Args: []string{"{limit}", "{window_s}"}, BesideBuiltins: true})
	if err != nil {
		t.Fatal(err)
	}
	runID := server.NewRunID()
	var s Scripts
	ts := s.Targets(specs, nil)
	on, opened, _, err := Open(ctx, rd, specs, runID, false, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s = *opened
	ns := server.FunctionNamespace(runID, 1)
	got := names()
	slices.Sort(got)
	if want := []string{ns + "_t", ns + "_w", ns + "_x"}; !slices.Equal(got, want) {
		t.Errorf("libraries %v, want %v", got, want)
	}
	lim, err := ts[0].New(on.Client, limit.Limit{Count: 1, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, want := range []bool{true, false} {
		d, err := lim.Allow(ctx, server.RunPrefix(runID)+"{k}", 1, algorithms.At(at))
		if err != nil || d.Allowed != want {
			t.Errorf("call %d: %+v, %v; want allowed %v", i, d, err, want)
		}
	}
	s.Close()
	if got := names(); len(got) != 0 {
		t.Errorf("after Close: libraries %v", got)
	}

	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.lua")
	if err := os.WriteFile(broken, []byte("#!lua name=broken\nlocal x = 1\nredis.register_function('f', function(keys, args)\n  return (1\nend)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	specs, err = targets.Load(targets.Given{Function: broken})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = Open(ctx, rd, specs, server.NewRunID(), false, true, io.Discard)
	if name, _ := field.Name(err); name != "function" || !strings.Contains(err.Error(), broken+":5: the library does not load (FUNCTION LOAD): ERR Error compiling function: user_function:5:") {
		t.Errorf("broken library: %v (field %q), want the field function, the file and line 5, and Redis's message", err, name)
	}
	if got := names(); len(got) != 0 {
		t.Errorf("after a refused library: libraries %v", got)
	}
}
