package engine

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/limit"
)

// LoadCA reads a PEM file of CA certificates to trust for rediss:// URLs
// (Options.RootCAs). Errors: the file cannot be read, or holds no PEM
// certificate.
func LoadCA(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// isTLSError reports whether err comes from a TLS handshake or certificate check.
func isTLSError(err error) bool {
	var cv *tls.CertificateVerificationError
	var he x509.HostnameError
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var ae tls.AlertError
	if errors.As(err, &cv) || errors.As(err, &he) || errors.As(err, &ua) || errors.As(err, &ci) ||
		errors.As(err, &rh) || errors.As(err, &ae) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "tls: ") || strings.Contains(s, "x509: ")
}

// ACLCommands are the commands ratelab's run and verify send, in the
// spelling of ACL SETUSER: the connection's own (PING, INFO for the
// version), the scripts' (EVALSHA, and EVAL when a script is not cached
// yet), the commands the algorithms' scripts call (an ACL applies inside
// scripts too), the server clock (TIME) and the bookkeeping of the run's
// keys (SCAN, MEMORY USAGE, UNLINK), and pipelined verify with its key
// expiry on the virtual clock (SCRIPT LOAD, MULTI/EXEC, PEXPIRETIME,
// PERSIST). Measured by removing each one in turn
// (internal/redistest's ACL test); a user needs them on keys ~ratelab:*.
// A Redis Cluster needs ACLClusterCommands too.
var ACLCommands = []string{
	"ping", "info", "time", "evalsha", "eval",
	"get", "set", "incrby", "pexpire",
	"zadd", "zcard", "zrange", "zremrangebyscore",
	"hget", "hmget", "hset", "hincrby", "hdel",
	"scan", "memory|usage", "unlink", "script|load", "multi", "exec",
	"pexpiretime", "persist",
}

// ACLClusterCommands are what ratelab also sends to a Redis Cluster: the
// client's slot map (CLUSTER SLOTS) and the cluster_state check (CLUSTER
// INFO). go-redis also asks COMMAND, but works without it.
var ACLClusterCommands = []string{"cluster|slots", "cluster|info"}

// probeScript is what CheckAccess runs to check EVAL and EVALSHA.
const probeScript = "return 0"

// CheckAccess checks that the connection's user may run what ratelab's run
// and verify send (ACLCommands) on keys under KeyPrefix: it calls each one
// directly on a few probe keys "ratelab:access-check:<id>:{p}:..." (deleted
// afterwards), then makes a decision of every algorithm, allowed and
// denied, on the injected and on the server's clock. The error names the
// first command refused: `user may not run ZADD: NOPERM ...`.
func CheckAccess(ctx context.Context, c redis.UniversalClient) error {
	base := KeyPrefix + "access-check:" + NewRunID() + ":{p}:"
	str, zset, hash := base+"s", base+"z", base+"h"
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if keys, err := ScanKeys(cctx, c, base); err == nil {
			_ = DeleteKeys(cctx, c, keys)
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
		{"SET", func() error { return c.Set(ctx, base+"g", "1", time.Minute).Err() }},
		{"INCRBY", func() error { return c.IncrBy(ctx, str, 1).Err() }},
		{"PEXPIRE", func() error { return c.PExpire(ctx, str, time.Minute).Err() }},
		{"ZADD", func() error { return c.ZAdd(ctx, zset, redis.Z{Score: 1, Member: "m"}).Err() }},
		{"ZCARD", func() error { return c.ZCard(ctx, zset).Err() }},
		{"ZRANGE", func() error { return c.ZRangeWithScores(ctx, zset, 0, 0).Err() }},
		{"ZREMRANGEBYSCORE", func() error { return c.ZRemRangeByScore(ctx, zset, "0", "0").Err() }},
		{"HSET", func() error { return c.HSet(ctx, hash, "f", 1).Err() }},
		{"HINCRBY", func() error { return c.HIncrBy(ctx, hash, "f", 1).Err() }},
		{"HGET", func() error { return c.HGet(ctx, hash, "f").Err() }},
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
	// the algorithms themselves: allowed, denied, and after their keys' window
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // any whole second
	for _, name := range algorithms.Names() {
		lim, err := algorithms.New(name, c, limit.Limit{Count: 1, Window: time.Second})
		if err != nil {
			return err
		}
		key := base + name
		for _, clk := range []algorithms.Clock{algorithms.At(at), algorithms.At(at), algorithms.At(at.Add(3 * time.Second)), algorithms.ServerTime()} {
			if _, err := lim.Allow(ctx, key, 1, clk); err != nil {
				return accessError(name+" decision", err)
			}
		}
	}
	return nil
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
		case strings.HasSuffix(step, " decision"):
			grant = "the commands its script calls"
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
