package leftovers

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
)

// An empty Redis has nothing to clean; a run that left keys and no record
// is kept unless named (--run), then removed.
func TestRun(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start()
	defer srv.Close()
	rd := srv.Redis
	for i, tc := range []struct {
		setup  func()
		cfg    CleanConfig
		remove bool
		want   string
	}{
		{func() {}, CleanConfig{}, true, "no ratelab keys found\n"},
		{func() { rd.Client.Set(ctx, server.KeyPrefix+"20261122T030515-cfab:k", "1", 0) }, CleanConfig{}, true, "kept"},
		{func() {}, CleanConfig{Run: "20261122T030515-cfab"}, true, "removed 1 keys\n"},
		{func() {}, CleanConfig{}, false, "no ratelab keys found\n"},
	} {
		tc.setup()
		var w bytes.Buffer
		live, err := Run(ctx, rd, tc.cfg, tc.remove, &w)
		if err != nil || live || !strings.Contains(w.String(), tc.want) {
			t.Errorf("step %d: got %q, live %v, %v; want %q", i, w.String(), live, err, tc.want)
		}
	}

	// function libraries: a killed run's is removed, a live run's and
	// the user's own (even one named ratelab_...) are left
	c := srv.Client()
	killed, running := server.FunctionNamespace("20261122T030516-abcd", 1)+"_w", server.FunctionNamespace("20261122T030517-abcd", 1)+"_x"
	for _, name := range []string{killed, running, "ratelab_mine", "mylib"} {
		if err := c.FunctionLoad(ctx, "#!lua name="+name+"\nredis.register_function('"+name+"_f', function() return 1 end)").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, MarkerKey("20261122T030517-abcd"), "{}", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		remove bool
		want   []string
		left   []string
	}{
		{false, []string{"function library " + killed + " (run 20261122T030516-abcd): its run is over: remove it with --yes",
			"function library " + running + " (run 20261122T030517-abcd): its run is still running: left alone"},
			[]string{killed, running, "ratelab_mine", "mylib"}},
		{true, []string{"function library " + killed + " (run 20261122T030516-abcd): removed"},
			[]string{running, "ratelab_mine", "mylib"}},
	} {
		var w bytes.Buffer
		if _, err := Run(ctx, rd, CleanConfig{}, tc.remove, &w); err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(w.String(), want) {
				t.Errorf("libraries step %d: got %q, want a line %q", i, w.String(), want)
			}
		}
		if strings.Contains(w.String(), "ratelab_mine") {
			t.Errorf("libraries step %d: the user's ratelab_mine is listed: %q", i, w.String())
		}
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range libs {
			names = append(names, l.Name)
		}
		slices.Sort(names)
		left := slices.Sorted(slices.Values(tc.left))
		if !slices.Equal(names, left) {
			t.Errorf("libraries step %d: left %v, want %v", i, names, left)
		}
	}
}
