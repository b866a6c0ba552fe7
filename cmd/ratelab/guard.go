package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/limit"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/targets"
)

// guard protects the user's Redis from the user's --script (issue 14,
// server.GuardScript): on a Redis ratelab did not start, the scripts'
// calls run as a temporary ACL user, unless --trust-script. viaLimiter
// says whether the command sends the scripts' calls through the limiter
// (run, verify). It returns the Redis the command must use from then on
// (rd, or rd seen through the guard, so that pipelined calls are guarded
// too) and a func that removes the ACL user.
func (t *targetFlags) guard(ctx context.Context, rd *server.Redis, runID string, viaLimiter bool, stderr io.Writer) (*server.Redis, func(), error) {
	nothing := func() {}
	if !targets.HasScript(t.specs) || rd == nil {
		return rd, nothing, nil
	}
	g, err := server.GuardScript(ctx, rd, runID, t.trust, viaLimiter)
	switch name, _ := field.Name(err); {
	case name == "script":
		return nil, nothing, usagef("%w; run it against a throwaway Redis (--redis exec) or pass --trust-script", flagError(nil, err))
	case err != nil:
		return nil, nothing, flagError(nil, err)
	case g == nil && t.trust && !server.Started(rd):
		fmt.Fprintln(stderr, "ratelab: --trust-script: your script runs with your connection's rights on your Redis")
	case g != nil:
		if err := t.probe(ctx, stderr); err != nil {
			_ = g.Close(ctx) // refused before any call: the user goes with it
			return nil, nothing, err
		}
		t.guarded = g.Client
		fmt.Fprintln(stderr, "ratelab: your script runs as a temporary ACL user that may touch only this run's keys (--trust-script to lift it)")
		unguard := func() {
			if err := g.Close(ctx); err != nil {
				fmt.Fprintf(stderr, "ratelab: the script's temporary ACL user may be left on your Redis: %v\n", err)
			}
		}
		return g.Redis(rd), unguard, nil
	}
	return rd, nothing, nil
}

// probeCalls and probeBound: the user's scripts are tried probeCalls times
// each on a throwaway redis-server, each call bounded by probeBound, before
// they run on the user's Redis (server.ProbeScript).
const (
	probeCalls = 8
	probeBound = time.Second
)

// probe tries the user's scripts on a throwaway redis-server (issue 24
// item 3): one that writes and then runs past probeBound would leave the
// user's Redis answering BUSY to everyone (SCRIPT KILL cannot stop it), so
// it is refused, naming --script. Without redis-server on PATH nothing is
// tried, and stderr says so.
func (t *targetFlags) probe(ctx context.Context, stderr io.Writer) error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(stderr, "ratelab: redis-server is not on PATH: your script is not tried on a throwaway Redis first")
		return nil
	}
	p, err := engine.OpenWith(ctx, "exec", engine.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "ratelab: your script is not tried on a throwaway Redis first: %v\n", err)
		return nil
	}
	defer func() { _ = p.Close() }() // ratelab's throwaway server
	l := limit.Limit{Count: 10, Window: time.Second}
	for _, s := range t.specs {
		if s.Script == "" {
			continue
		}
		lim, err := s.Build(p.Client, l)
		if err != nil {
			return flagError(nil, err)
		}
		seq := 0
		_, err = server.ProbeScript(ctx, p, probeCalls, probeBound, func(ctx context.Context, _ redis.UniversalClient) error {
			seq++
			_, err := lim.Allow(ctx, "ratelab:probe:{k"+strconv.Itoa(seq%3)+"}", 1, algorithms.At(harness.VirtualEpoch.Add(time.Duration(seq)*100*time.Millisecond)))
			return err
		})
		if name, _ := field.Name(err); name == "script" {
			return usagef("--script %s: %w", s.Name, errors.Unwrap(err))
		}
		if err != nil {
			fmt.Fprintf(stderr, "ratelab: your script could not be tried on a throwaway Redis: %v\n", err)
		}
	}
	return nil
}
