package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/measure"
)

// runRedisBenchmark runs redis-benchmark with call's EVALSHA, the same
// clients and pipeline, n requests, keys as ratelab's (__rand_int__ is 12
// digits) and nonces from __rand_int__.
func (b *bencher) runRedisBenchmark(ctx context.Context, call Call, path, prefix string, n int64) (measure.BenchRun, error) {
	cfg := b.cfg
	args := b.redisBenchmarkConn()
	args = append(args, "-c", strconv.Itoa(cfg.Clients), "-P", strconv.Itoa(cfg.Pipeline),
		"-n", strconv.FormatInt(n, 10), "-r", strconv.Itoa(cfg.Keys), "--csv")
	args = append(args, RedisBenchmarkCommand(call, path, prefix)...)
	cmd := exec.CommandContext(ctx, cfg.RedisBenchmark, args...)
	// it ends with bench, even on kill -9 (it kept writing ~3 s after one)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return measure.BenchRun{}, fmt.Errorf("redis-benchmark: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	wall := time.Since(start)
	run := measure.BenchRun{Tool: "redis-benchmark", Decisions: n}
	rec, err := parseRedisBenchmarkCSV(stdout.String())
	if err != nil {
		return run, err
	}
	run.PerS = rec["rps"]
	run.P50US = int64(math.Round(rec["p50_latency_ms"] * 1000))
	run.P99US = int64(math.Round(rec["p99_latency_ms"] * 1000))
	if cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(); wall > 0 {
		run.ClientCPUPct = 100 * cpu.Seconds() / wall.Seconds()
	}
	run.Seconds = wall.Seconds()
	if run.PerS > 0 {
		run.Seconds = float64(n) / run.PerS
	}
	return run, nil
}

// RedisBenchmarkCommand is the command line redis-benchmark sends for
// call on path: EVALSHA sha 1 <key> ARGV..., the key "<prefix>{__rand_int__}"
// (allow) or "<prefix>{hot}" (deny), nonces "__rand_int__".
func RedisBenchmarkCommand(call Call, path, prefix string) []string {
	key := prefix + "{__rand_int__}"
	if path == measure.PathDeny {
		key = hotKey(prefix)
	}
	out := []string{"EVALSHA", call.SHA, "1", key}
	for i, a := range call.Args {
		if call.isNonce(i) {
			a = "__rand_int__"
		}
		out = append(out, a)
	}
	return out
}

// redisBenchmarkConn is how redis-benchmark reaches the server: the URL
// without its user and password, or -h/-p/--dbnum of the server's
// address, and the one-time user (b.user) when the server wants a login.
// The user's own password is never on redis-benchmark's command line,
// which every user of the machine can read.
func (b *bencher) redisBenchmarkConn() []string {
	opt := b.nodes[0].Options()
	var args []string
	if u, err := url.Parse(b.cfg.RedisURL); err == nil && (u.Scheme == "redis" || u.Scheme == "rediss") {
		u.User = nil
		args = []string{"-u", u.String()}
	} else {
		host, port, _ := strings.Cut(opt.Addr, ":")
		if i := strings.LastIndex(opt.Addr, ":"); i >= 0 {
			host, port = opt.Addr[:i], opt.Addr[i+1:]
		}
		args = []string{"-h", strings.Trim(host, "[]"), "-p", port}
		if opt.DB != 0 {
			args = append(args, "--dbnum", strconv.Itoa(opt.DB))
		}
	}
	if b.user != nil {
		args = append(args, "--user", b.user.User, "-a", b.user.Password)
	}
	return args
}

// needsLogin reports whether connections made with opt log in (a user,
// a password or a credentials provider): then redis-benchmark needs a
// login too, and gets a one-time user (server.NewTempUser).
func needsLogin(opt *redis.Options) bool {
	return opt.Username != "" || opt.Password != "" || opt.CredentialsProvider != nil ||
		opt.CredentialsProviderContext != nil || opt.StreamingCredentialsProvider != nil
}

// parseRedisBenchmarkCSV reads redis-benchmark --csv output: a header line
// and one line per test; it returns the last test's numeric fields.
func parseRedisBenchmarkCSV(out string) (map[string]float64, error) {
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, fmt.Errorf("redis-benchmark: unexpected output %q", out)
	}
	head, last := recs[0], recs[len(recs)-1]
	m := map[string]float64{}
	for i, h := range head {
		if i < len(last) {
			if v, err := strconv.ParseFloat(last[i], 64); err == nil {
				m[h] = v
			}
		}
	}
	if m["rps"] <= 0 {
		return nil, fmt.Errorf("redis-benchmark: no requests per second in %q", out)
	}
	return m, nil
}
