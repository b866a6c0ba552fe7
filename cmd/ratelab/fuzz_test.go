package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// The flags of run parse or fail with a usage error; none panics, and none
// reaches Redis (the config is checked before any connection).
func FuzzRunFlags(f *testing.F) {
	f.Add("50", "10s", "1", "virtual")
	f.Add("0", "-1s", "51", "redis")
	f.Add("9223372036854775807", "2562047h", "9223372036854775807", "x")
	f.Add("1", "1ns", "1", "client")
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
		if cfg.Limit < 0 || cfg.Window < 0 || cfg.Cost < 0 {
			t.Errorf("accepted %+v", cfg)
		}
		if cfg.Limit > 0 && cfg.Cost > cfg.Limit {
			t.Errorf("cost %d > limit %d accepted", cfg.Cost, cfg.Limit)
		}
	})
}
