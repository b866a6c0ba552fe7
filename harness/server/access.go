package server

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ACLCommands are the commands ratelab's run and verify send, in the
// spelling of ACL SETUSER: the connection's own (PING, INFO for the
// version), the scripts' (EVALSHA, and EVAL when a script is not cached
// yet), the commands the algorithms' scripts call (an ACL applies inside
// scripts too), the server clock (TIME) and the bookkeeping of the run's
// keys (SCAN, MEMORY USAGE, UNLINK), and pipelined verify with its key
// expiry on the virtual clock (SCRIPT LOAD, and inside the call: HGETALL,
// PEXPIRETIME; the built-in algorithms' keys never need PERSIST or
// PEXPIREAT, and one EVALSHA per decision needs no MULTI/EXEC). Measured by removing each one in turn
// (harness/engine's ACL test); a user needs them on keys ~ratelab:*.
// A Redis Cluster needs ACLClusterCommands too.
var ACLCommands = []string{
	"ping", "info", "time", "evalsha", "eval",
	"get", "set", "incrby", "pexpire",
	"zadd", "zcard", "zrange", "zremrangebyscore",
	"hget", "hmget", "hset", "hincrby", "hdel",
	"scan", "memory|usage", "unlink", "script|load",
	"pexpiretime", "hgetall",
}

// ACLClusterCommands are what ratelab also sends to a Redis Cluster: the
// client's slot map (CLUSTER SLOTS) and the cluster_state check (CLUSTER
// INFO). go-redis also asks COMMAND, but works without it.
var ACLClusterCommands = []string{"cluster|slots", "cluster|info"}

// AccessCheckInfix follows the run prefix of CheckAccess's probe keys.
const AccessCheckInfix = "access-check:"

// probeScript is what CheckAccess runs to check EVAL and EVALSHA.
const probeScript = "return 0"

// accessProbe calls, from a script, every command the algorithms' scripts
// call (see access_probe.lua).
//
//go:embed access_probe.lua
var accessProbeSrc string

var accessProbe = redis.NewScript(accessProbeSrc)

// CheckAccess checks that the connection's user may run what ratelab's run
// and verify send (ACLCommands) on keys under KeyPrefix: it calls each one
// directly on a few probe keys "ratelab:<id>:access-check:{p}:..." (a run
// prefix of their own, so that `ratelab clean` finds what a kill -9 leaves;
// deleted afterwards), then runs a probe script (EVALSHA) that calls, from
// a script, every command the algorithms' scripts call (TIME, their key
// commands, PEXPIRE): an ACL applies inside scripts too. It imports no
// algorithm.
//
// Every probe key is born with its TTL, so none is left without one
// whatever moment the process dies at: the one key written is made by SET
// ... PX (a minute); the commands that would make a key of another type
// (ZADD, HSET, HINCRBY) are sent to that string key, where Redis checks
// the ACL and then answers WRONGTYPE (a pass) without writing; the others
// read, or write only keys that exist. The error names the first command
// refused, with the grant that fixes it: `the Redis user may not run ZADD
// (NOPERM ...): grant +zadd (ratelab needs ...)`; a command refused only
// inside a script is named "ZADD in a script".
func CheckAccess(ctx context.Context, c redis.UniversalClient) error {
	base := RunPrefix(NewRunID()) + AccessCheckInfix + "{p}:"
	str, zset, hash := base+"s", base+"z", base+"h"
	defer func() {
		cctx, cancel := CleanupContext(ctx, 2*time.Second)
		defer cancel()
		if keys, err := ScanKeys(cctx, c, base); err == nil {
			_ = DeleteKeys(cctx, c, keys) // best effort: a key left is under ratelab's prefix, for ratelab clean
		}
	}()
	sum := sha1.Sum([]byte(probeScript))
	sha := hex.EncodeToString(sum[:])
	steps := []struct {
		name string
		run  func() error
	}{
		{"PING", func() error { return c.Ping(ctx).Err() }},
		{"INFO", func() error { return c.Info(ctx, "server").Err() }},
		{"TIME", func() error { return c.Time(ctx).Err() }},
		{"EVAL", func() error { return c.Eval(ctx, probeScript, []string{str}).Err() }},
		{"EVALSHA", func() error { return c.EvalSha(ctx, sha, []string{str}).Err() }},
		{"GET", func() error { return ignoreNil(c.Get(ctx, str).Err()) }},
		{"PEXPIRE", func() error { return c.PExpire(ctx, str, time.Minute).Err() }}, // no key yet: nothing written
		{"SET", func() error { return c.Set(ctx, str, "1", time.Minute).Err() }},    // born with its TTL
		{"INCRBY", func() error { return c.IncrBy(ctx, str, 1).Err() }},             // keeps it
		{"ZADD", func() error { return wrongType(c.ZAdd(ctx, str, redis.Z{Score: 1, Member: "m"}).Err()) }},
		{"ZCARD", func() error { return c.ZCard(ctx, zset).Err() }},
		{"ZRANGE", func() error { return c.ZRangeWithScores(ctx, zset, 0, 0).Err() }},
		{"ZREMRANGEBYSCORE", func() error { return c.ZRemRangeByScore(ctx, zset, "0", "0").Err() }},
		{"HSET", func() error { return wrongType(c.HSet(ctx, str, "f", 1).Err()) }},
		{"HINCRBY", func() error { return wrongType(c.HIncrBy(ctx, str, "f", 1).Err()) }},
		{"HGET", func() error { return ignoreNil(c.HGet(ctx, hash, "f").Err()) }},
		{"HMGET", func() error { return c.HMGet(ctx, hash, "f").Err() }},
		{"HDEL", func() error { return c.HDel(ctx, hash, "f").Err() }},
		{"SCAN", func() error { _, err := ScanKeys(ctx, c, base); return err }},
		{"MEMORY USAGE", func() error { return ignoreNil(c.MemoryUsage(ctx, str, 0).Err()) }},
		{"UNLINK", func() error { return c.Unlink(ctx, str).Err() }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return accessError(s.name, err)
		}
	}
	// what the algorithms' scripts call, from a script: EVALSHA (EVAL when
	// not cached yet), TIME, their key commands and PEXPIRE
	res, err := accessProbe.Run(ctx, c, []string{str, zset, hash}).StringSlice()
	if err != nil {
		return accessError("EVALSHA", err)
	}
	if len(res) == 2 {
		return accessError(res[0]+" in a script", errors.New(res[1]))
	}
	return nil
}

// wrongType is err, or nil for a WRONGTYPE reply: the command passed the
// ACL and was refused only for the key's type, writing nothing.
func wrongType(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		return nil
	}
	return err
}

func ignoreNil(err error) error {
	if err == redis.Nil {
		return nil
	}
	return err
}

// accessError says which step of CheckAccess was refused, with the grant
// that fixes it.
func accessError(step string, err error) error {
	s := oneLine(err.Error())
	switch {
	case strings.Contains(s, "NOPERM") && strings.Contains(s, "keys"):
		return fmt.Errorf("the Redis user may not use ratelab's keys (%s: %s): grant ~%s*", step, s, KeyPrefix)
	case strings.Contains(s, "NOPERM") || strings.Contains(s, "can't run this command"):
		grant := "+" + strings.ToLower(strings.ReplaceAll(step, " ", "|"))
		all := "+" + strings.Join(ACLCommands, " +")
		switch {
		case strings.HasSuffix(step, " in a script"):
			grant = "+" + strings.ToLower(strings.TrimSuffix(step, " in a script"))
		case strings.HasPrefix(step, "CLUSTER"):
			all = "+" + strings.Join(ACLClusterCommands, " +") + " besides those of a single server"
		}
		return fmt.Errorf("the Redis user may not run %s (%s): grant %s (ratelab needs %s)", step, s, grant, all)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return fmt.Errorf("checking permissions (%s): %s", step, s)
	}
	return fmt.Errorf("checking permissions: %s: %s", step, s)
}
