package main

import (
	"testing"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/spf13/cobra"
)

// The flags of run parse or fail with a usage error; none panics, and none
// reaches Redis (the config is checked before any connection).
func FuzzRunFlags(f *testing.F) {
	f.Add("50", "10s", "1", "virtual")
	f.Add("0", "-1s", "51", "redis")
	f.Add("9223372036854775807", "2562047h", "9223372036854775807", "x")
	f.Add("1", "1ns", "1", "client")
	f.Add("1000000000000000000", "1000000h", "1", "virtual") // issue 14: panicked in the schedule builders
	f.Add("10000000", "87600h", "1", "virtual")              // issue 14: ran out of memory
	f.Add("3", "87600h", "1", "virtual")
	f.Fuzz(func(t *testing.T, limit, window, cost, clock string) {
		c := &cobra.Command{Use: "run"}
		rf := &runFlags{}
		rf.bind(c)
		if err := c.ParseFlags([]string{"--limit", limit, "--window", window, "--cost", cost, "--clock", clock}); err != nil {
			return
		}
		cfg, err := rf.config(c)
		if err != nil {
			if _, ok := err.(usageError); !ok {
				t.Errorf("not a usage error: %T %v", err, err)
			}
			return
		}
		if cfg.Limit.Count < 0 || cfg.Limit.Window < 0 || cfg.Cost < 0 {
			t.Errorf("accepted %+v", cfg)
		}
		if cfg.Limit.Count > 0 && cfg.Cost > cfg.Limit.Count {
			t.Errorf("cost %d > limit %d accepted", cfg.Cost, cfg.Limit.Count)
		}
		if cfg.Limit.Count > run.MaxLimit || cfg.Limit.Window > harness.MaxRunWindow {
			t.Errorf("size beyond the run's bounds accepted: %+v", cfg)
		}
		if cfg.Limit.Count <= 1000 { // build what run would build: no panic at any accepted window
			for _, name := range scenarios.Names() {
				sc, _ := scenarios.Get(name)
				_, p := cfg.LimitFor(sc)
				_ = sc.Build(p)
			}
		}
	})
}
