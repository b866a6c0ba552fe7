package main

import (
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/scenarios"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The flags of run parse or fail with a usage error; none panics, and none
// reaches Redis (the config is checked before any connection).
func FuzzRunFlags(f *testing.F) {
	f.Add("50", "10s", "1", "virtual")
	f.Add("0", "-1s", "51", "redis")
	f.Add("9223372036854775807", "2562047h", "9223372036854775807", "x")
	f.Add("1", "1ns", "1", "client")
	f.Add("1000000000000000000", "1000000h", "1", "virtual") // panicked in the schedule builders
	f.Add("10000000", "87600h", "1", "virtual")              // ran out of memory
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

// fuzzCommands are the commands FuzzCommandFlags drives, each with the
// arguments that make it otherwise valid.
var fuzzCommands = [][]string{
	{"run", "--scenarios", "steady"},
	{"verify", "--algorithm", "sliding-log", "--limit", "10", "--window", "1s"},
	{"bench"},
	{"capacity"},
	{"demo"},
	{"clean", "--yes"},
}

// fuzzSkipped are the flags FuzzCommandFlags leaves alone: where Redis is
// (the fuzz keeps it unreachable), files and URLs (read or written),
// binaries run, and help.
var fuzzSkipped = map[string]bool{
	"redis": true, "redis-image": true, "redis-benchmark": true, "redis-ca": true, "connect-timeout": true,
	"out": true, "cpuprofile": true, "junit": true, "force": true, "help": true,
	"script": true, "config": true, "scenario-file": true, "traffic": true, "http": true,
}

// fuzzFlags returns the flags of command name that FuzzCommandFlags sets,
// sorted.
func fuzzFlags(name string) []string {
	root := newRoot(io.Discard, io.Discard)
	c, _, err := root.Find([]string{name})
	if err != nil {
		panic(err)
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !fuzzSkipped[f.Name] {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	return names
}

// every flag of every command takes any value without a
// panic: each command, otherwise valid, is given two of its flags with
// fuzzed values and a Redis that cannot be reached; it exits 2, either
// refusing a value with an error naming a flag or failing to reach Redis
// (the values passed every check).
func FuzzCommandFlags(f *testing.F) {
	flags := make([][]string, len(fuzzCommands))
	for i, c := range fuzzCommands {
		flags[i] = fuzzFlags(c[0])
	}
	seed := func(cmd, flag string, value string) {
		for i, c := range fuzzCommands {
			if c[0] != cmd {
				continue
			}
			for j, n := range flags[i] {
				if n == flag {
					f.Add(uint8(i), uint8(j), value, uint8(j), value)
				}
			}
		}
	}
	// values that once panicked or had no bound
	seed("verify", "window", "1000000h")
	seed("verify", "window", "2562047h")
	seed("verify", "limit", "10/1000000h")
	seed("verify", "limit", "1e18")
	seed("verify", "min-fidelity", "NaN")
	seed("verify", "arg", "{now_us % 0}")
	seed("bench", "procs", "100000")
	seed("bench", "limit", "1e18")
	seed("bench", "rate", "1e300")
	seed("run", "limit", "1e18")
	seed("run", "scenarios", "a,a")
	seed("run", "algorithms", "")
	seed("capacity", "limits", "1e18")
	seed("demo", "window", "2562047h")
	f.Fuzz(func(t *testing.T, cmd, flag1 uint8, value1 string, flag2 uint8, value2 string) {
		i := int(cmd) % len(fuzzCommands)
		names := flags[i]
		n1, n2 := names[int(flag1)%len(names)], names[int(flag2)%len(names)]
		args := append(append([]string{}, fuzzCommands[i]...),
			"--redis", "redis://127.0.0.1:1", "--out", filepath.Join(t.TempDir(), "out"),
			"--"+n1+"="+value1, "--"+n2+"="+value2)
		if fuzzCommands[i][0] == "clean" { // no --out
			args = slices.DeleteFunc(args, func(s string) bool { return s == "--out" || strings.HasSuffix(s, "/out") })
		}
		var stdout, stderr bytes.Buffer
		code := Main(args, &stdout, &stderr)
		msg := stderr.String()
		if code != exitUsage {
			t.Fatalf("%q: exit %d, want 2; stderr: %s", args, code, msg)
		}
		if strings.Contains(msg, "cannot reach Redis") {
			return
		}
		named := strings.Contains(msg, "flag") // pflag's own: `invalid argument "x" for "--n" flag`
		for _, n := range names {
			named = named || strings.Contains(msg, "--"+n)
		}
		if !named {
			t.Fatalf("%q: error names no flag: %s", args, msg)
		}
	})
}
