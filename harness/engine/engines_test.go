package engine_test

// The engines ratelab runs on, each tested for real: a local 3-master Redis
// Cluster, a Redis container (testcontainers-go), a TLS-only redis-server and
// an ACL user limited to server.ACLCommands. One cluster and one TLS server
// for the package (TestMain), one container (TestContainer).

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/engine/enginetest"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/run"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/scenarios"
)

var (
	srv     *redistest.Server // one node: the reference, and the ACL server
	cluster *redistest.Cluster
	tlsSrv  *redistest.TLSServer
	ctx     = context.Background()
)

func TestMain(m *testing.M) {
	srv = redistest.Start()
	cluster = redistest.StartCluster()
	dir, err := os.MkdirTemp("", "ratelab-tls-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tlsSrv, err = redistest.StartTLS(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "redistest: these tests need a redis-server built with TLS (Debian's is): %v\n", err)
		os.Exit(2)
	}
	code := m.Run()
	tlsSrv.Close()
	os.RemoveAll(dir)
	cluster.Close()
	srv.Close()
	os.Exit(code)
}

// verdictRow is what must not depend on the engine: every metric of a row
// except memory and latency.
type verdictRow struct {
	Requests, AcceptedRequests, Offered, Accepted, MaxInWindow, Ideal, Errors int64
	Ratio, Fidelity                                                           float64
}

func verdicts(t *testing.T, rd *server.Redis, cfg run.Config) map[string]verdictRow {
	t.Helper()
	res, err := run.Run(ctx, rd, cfg, nil, nil)
	if err != nil {
		t.Fatalf("run on %s: %v", rd.Info.Mode, err)
	}
	out := map[string]verdictRow{}
	for _, r := range res.Results {
		out[r.Algorithm+"/"+r.Scenario] = verdictRow{r.Requests, r.AcceptedRequests, r.Offered, r.Accepted, r.MaxInWindow, r.Ideal, r.Errors, r.Ratio, r.Fidelity}
	}
	return out
}

// injects reports whether algorithm name decides on an injected clock (its
// virtual-time results are exact); the others read Redis TIME.
func injects(name string) bool {
	lim, err := algorithms.New(name, srv.Client(), limit.Limit{Count: 1, Window: time.Second})
	if err != nil {
		panic(err)
	}
	return lim.Capabilities().InjectsTime
}

// sameVerdicts compares the rows of two engines: exactly for algorithms on
// an injected clock, the verdict (over the limit or not) for the others.
func sameVerdicts(t *testing.T, engine string, want, got map[string]verdictRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, one node %d", engine, len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if g.Errors != 0 || w.Errors != 0 {
			t.Errorf("%s %s: errors %d (one node %d)", engine, k, g.Errors, w.Errors)
		}
		if injects(strings.SplitN(k, "/", 2)[0]) {
			if g != w {
				t.Errorf("%s %s: %+v, one node %+v", engine, k, g, w)
			}
		} else if (g.Ratio > 1) != (w.Ratio > 1) {
			t.Errorf("%s %s: ratio %.2f, one node %.2f: not the same verdict", engine, k, g.Ratio, w.Ratio)
		}
	}
}

// Every algorithm gives the same run metrics and verify verdicts on the
// cluster as on one node, and its keys spread over all three masters.
func TestClusterSameVerdicts(t *testing.T) {
	if cluster.Info.Mode != "cluster" || len(strings.Split(cluster.Info.Addr, ",")) != engine.ClusterMasters {
		t.Fatalf("cluster info: %+v", cluster.Info)
	}
	t.Run("run", func(t *testing.T) {
		cfg := run.Config{Scenarios: []string{"boundary-burst", "steady", "overload"}, RunID: "same-" + server.NewRunID()}
		one := verdicts(t, srv.Redis, cfg)
		cfg.RunID = "same-" + server.NewRunID()
		sameVerdicts(t, "cluster", one, verdicts(t, cluster.Redis, cfg))
		if r := one["fixed-window/boundary-burst"]; r.MaxInWindow != 100 || r.Ratio != 2 {
			t.Errorf("fixed-window boundary burst on one node: %+v, want 100 in one window (2x)", r)
		}
	})
	t.Run("verify", func(t *testing.T) {
		for _, name := range algorithms.Names() {
			// injected clock: virtual families at 1h; Redis TIME: real time at 500ms
			l := limit.Limit{Count: 20, Window: time.Hour}
			if !injects(name) {
				l.Window = 500 * time.Millisecond
			}
			var reps [2]*measure.VerifyReport
			for i, rd := range []*server.Redis{srv.Redis, cluster.Redis} {
				lim, err := algorithms.New(name, rd.Client, l)
				if err != nil {
					t.Fatal(err)
				}
				reps[i], err = verify.Run(ctx, rd, lim, verify.Config{Limits: []limit.Limit{l}, Seed: 1})
				if err != nil {
					t.Fatalf("%s on %s: %v", name, rd.Info.Mode, err)
				}
				if reps[i].Errors != 0 {
					t.Errorf("%s on %s: %d errors: %v", name, rd.Info.Mode, reps[i].Errors, reps[i].ErrorSamples)
				}
			}
			one, cl := reps[0], reps[1]
			if one.Verdict != cl.Verdict {
				t.Errorf("%s: verdict %s on the cluster, %s on one node", name, cl.Verdict, one.Verdict)
			}
			for i, f := range one.Families {
				if i >= len(cl.Families) || cl.Families[i].Family != f.Family || cl.Families[i].Verdict != f.Verdict {
					t.Errorf("%s family %s: %+v on the cluster, %+v on one node", name, f.Family, cl.Families[min(i, len(cl.Families)-1)], f)
				}
			}
			t.Logf("%s: %s on both (%d decisions on the cluster)", name, cl.Verdict, cl.Decisions)
		}
	})
	t.Run("keys spread over the masters", func(t *testing.T) {
		// 60 keys per algorithm: hash tags {k0}..{k59} land on all masters
		var arr []scenarios.Arrival
		for i := range 60 {
			arr = append(arr, scenarios.Arrival{At: time.Duration(i) * time.Millisecond, Key: fmt.Sprintf("k%d", i), Cost: 1})
		}
		// a window of an hour: no key expires (TTL = window) before it is counted
		l := limit.Limit{Count: 5, Window: time.Hour}
		sched := scenarios.Schedule{Scenario: "spread", Params: scenarios.Params{Limit: l.Count, Window: l.Window}, Arrivals: arr}
		prefix := server.KeyPrefix + "spread-" + server.NewRunID() + ":"
		var jobs []harness.Job
		for _, name := range algorithms.Names() {
			lim, err := algorithms.New(name, cluster.Client(), l)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, harness.Job{Limiter: lim, Limit: l, Prefix: prefix + name + ":"}.WithSchedule(sched))
		}
		t.Cleanup(func() {
			keys, _ := server.ScanKeys(ctx, cluster.Client(), prefix)
			_ = server.DeleteKeys(ctx, cluster.Client(), keys)
		})
		r := &harness.Runner{Redis: cluster.Client(), Clock: harness.VirtualClock}
		rows, err := r.Run(ctx, jobs)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if row.Errors != 0 || row.Accepted != 60 || row.Keys < 60 {
				t.Errorf("%s: %d errors, %d accepted, %d keys; want 0, 60, >= 60", row.Algorithm, row.Errors, row.Accepted, row.Keys)
			}
		}
		for _, name := range algorithms.Names() {
			nodes, err := redistest.KeysByNode(ctx, cluster.Client(), prefix+name+":")
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != engine.ClusterMasters {
				t.Fatalf("%d masters, want %d", len(nodes), engine.ClusterMasters)
			}
			for addr, n := range nodes {
				if n == 0 {
					t.Errorf("%s: master %s holds none of the keys", name, addr)
				}
			}
			t.Logf("%s: keys per master %v", name, nodes)
		}
		// every key lives on the master that owns its slot (CLUSTER KEYSLOT)
		keys, err := server.ScanKeys(ctx, cluster.Client(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		var checked atomic.Int64
		err = cluster.Client().ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			for _, k := range keys {
				if n, err := node.Exists(ctx, k).Result(); err != nil || n == 0 {
					continue // MOVED or absent: another master's key
				}
				slot, err := node.ClusterKeySlot(ctx, k).Result()
				if err != nil {
					return err
				}
				owner, err := cluster.Client().MasterForKey(ctx, k)
				if err != nil {
					return err
				}
				if owner.Options().Addr != node.Options().Addr {
					return fmt.Errorf("key %s (slot %d) is on %s, its slot's master is %s", k, slot, node.Options().Addr, owner.Options().Addr)
				}
				checked.Add(1)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if int(checked.Load()) != len(keys) {
			t.Errorf("checked %d of %d keys", checked.Load(), len(keys))
		}
	})
}

// A bad cluster seed is a one-line error naming it, within the timeout.
func TestClusterURLErrors(t *testing.T) {
	cases := []struct {
		spec, want string
	}{
		{"redis+cluster://127.0.0.1:1", "cannot reach Redis Cluster seed 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"redis+cluster://127.0.0.1:1,127.0.0.1:2", "no Redis Cluster seed answered: cannot reach Redis at 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused; cannot reach Redis at 127.0.0.1:2"},
		{"redis+cluster://" + srv.Info.Addr, "is not a Redis Cluster node (cluster support disabled): use redis://"},
		{"redis+cluster://nohost", `seed "nohost": want host:port`},
	}
	for _, c := range cases {
		start := time.Now()
		_, err := engine.Open(ctx, c.spec, 500*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.spec, err, c.want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v, want within the 500ms connect timeout", c.spec, d)
		}
	}
	// the user's cluster by URL: any seed reaches all masters
	addrs := strings.Split(cluster.Info.Addr, ",")
	for _, spec := range []string{
		"redis+cluster://" + addrs[1],
		"redis+cluster://127.0.0.1:1," + strings.Join(addrs, ","),
		"redis://" + addrs[0] + "?addr=" + addrs[2],
	} {
		rd, err := engine.Open(ctx, spec, 2*time.Second)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		nodes, err := redistest.KeysByNode(ctx, rd.Client, "none:")
		if rd.Owned() || rd.Info.Mode != "cluster-url" || err != nil || len(nodes) != engine.ClusterMasters {
			t.Errorf("%s: owned %v mode %s, %d masters (%v)", spec, rd.Owned(), rd.Info.Mode, len(nodes), err)
		}
		rd.Close()
	}
	if err := cluster.Client().Ping(ctx).Err(); err != nil {
		t.Errorf("closing a cluster URL stopped the cluster: %v", err)
	}
}

// ratelab's run through a TLS connection, and the TLS failures: a name the
// certificate does not list, and a CA ratelab was not given.
func TestTLS(t *testing.T) {
	o := engine.Options{Timeout: 2 * time.Second, RootCAs: tlsSrv.Certs.Pool}
	rd, err := engine.OpenWith(ctx, tlsSrv.URL("localhost"), o)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := verdicts(t, rd, run.Config{Scenarios: []string{"boundary-burst"}, Algorithms: []string{"fixed-window", "sliding-log"}})
	if r := got["fixed-window/boundary-burst"]; r.MaxInWindow != 100 {
		t.Errorf("fixed-window over TLS: %+v", r)
	}
	if r := got["sliding-log/boundary-burst"]; r.MaxInWindow != 50 {
		t.Errorf("sliding-log over TLS: %+v", r)
	}
	ca, err := server.LoadCA(tlsSrv.Certs.CAFile)
	if err != nil || !ca.Equal(tlsSrv.Certs.Pool) {
		t.Errorf("LoadCA: %v", err)
	}
	if _, err := server.LoadCA(tlsSrv.Certs.KeyFile); err == nil {
		t.Error("LoadCA of a key file: no error")
	}

	port := fmt.Sprint(tlsSrv.Port)
	cases := []struct {
		name, spec string
		o          engine.Options
		want       []string
	}{
		{"name mismatch", tlsSrv.URL("127.0.0.1"), o,
			[]string{"TLS handshake with 127.0.0.1:" + port + " failed", "cannot validate certificate for 127.0.0.1", "does not name the host"}},
		{"unknown CA", tlsSrv.URL("localhost"), engine.Options{Timeout: o.Timeout},
			[]string{"TLS handshake with localhost:" + port + " failed", "unknown authority", "--redis-ca"}},
		{"plain text to a TLS port", "redis://localhost:" + port, engine.Options{Timeout: 500 * time.Millisecond},
			[]string{"cannot reach Redis at localhost:" + port}},
		{"cluster URL over TLS, name mismatch", "rediss+cluster://127.0.0.1:" + port, o,
			[]string{"TLS handshake with 127.0.0.1:" + port + " failed"}},
	}
	for _, c := range cases {
		start := time.Now()
		_, err := engine.OpenWith(ctx, c.spec, c.o)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", c.name, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: not one line: %q", c.name, err)
		}
		if d := time.Since(start); d > c.o.Timeout+500*time.Millisecond {
			t.Errorf("%s: took %v, connect timeout %v", c.name, d, c.o.Timeout)
		}
	}
}

// aclWorkload is everything run and verify send, on a client that skipped
// Open's permission check: the connection check, every algorithm on every
// clock and the verify families. It returns the first failure.
func aclWorkload(c *redis.Client) error {
	if err := c.Ping(ctx).Err(); err != nil {
		return err
	}
	if err := c.Info(ctx, "server").Err(); err != nil {
		return err
	}
	rd := &server.Redis{Client: c, Info: measure.RedisInfo{Mode: "url"}}
	for _, clock := range []harness.ClockMode{harness.VirtualClock, harness.RedisClock} {
		cfg := run.Config{Scenarios: []string{"boundary-burst"}, Clock: clock}
		if clock != harness.VirtualClock {
			cfg.Limit = limit.Limit{Count: 10, Window: 200 * time.Millisecond}
		}
		res, err := run.Run(ctx, rd, cfg, nil, nil)
		if err != nil {
			return err
		}
		for _, r := range res.Results {
			if r.Errors > 0 || r.Keys == 0 || r.MemoryBytes == 0 {
				return fmt.Errorf("run %s on the %s clock: %d errors, %d keys, %d B", r.Algorithm, clock, r.Errors, r.Keys, r.MemoryBytes)
			}
		}
	}
	for _, name := range algorithms.Names() {
		l := limit.Limit{Count: 10, Window: time.Hour}
		if !injects(name) {
			l.Window = 200 * time.Millisecond
		}
		lim, _ := algorithms.New(name, c, l)
		rep, err := verify.Run(ctx, rd, lim, verify.Config{Limits: []limit.Limit{l}, Seed: 1, Clients: 2})
		if err != nil {
			return fmt.Errorf("verify %s: %w", name, err)
		}
		if rep.Errors > 0 {
			return fmt.Errorf("verify %s: %d errors: %v", name, rep.Errors, rep.ErrorSamples)
		}
	}
	// nothing left behind: the run's own cleanup worked
	if n, err := srv.Client().Keys(ctx, server.KeyPrefix+"*").Result(); err != nil || len(n) > 0 {
		return fmt.Errorf("keys left behind: %v %v", n, err)
	}
	return nil
}

// An ACL user with exactly server.ACLCommands on ~ratelab:* can run ratelab;
// a wrong password and a missing permission are one-line errors.
func TestACL(t *testing.T) {
	const user, pass = "ratelab", "s3cret"
	if err := redistest.SetACLUser(ctx, srv.Client(), user, pass, server.ACLCommands); err != nil {
		t.Fatal(err)
	}
	defer srv.Client().Do(ctx, "ACL", "DELUSER", user)
	url := "redis://" + user + ":" + pass + "@" + srv.Info.Addr
	rd, err := engine.Open(ctx, url, 2*time.Second)
	if err != nil {
		t.Fatalf("the ACL user with %v: %v", server.ACLCommands, err)
	}
	defer rd.Close()
	if err := aclWorkload(rd.Client.(*redis.Client)); err != nil {
		t.Fatalf("the ACL user with server.ACLCommands: %v", err)
	}

	start := time.Now()
	_, err = engine.Open(ctx, "redis://"+user+":wrong@"+srv.Info.Addr, time.Second)
	if err == nil || !strings.Contains(err.Error(), `authentication as user "ratelab" failed at `+srv.Info.Addr) ||
		!strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: %v", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("wrong password took %v", d)
	}

	for _, missing := range []string{"zadd", "evalsha", "memory|usage"} {
		if err := redistest.SetACLUser(ctx, srv.Client(), user, pass, redistest.Without(server.ACLCommands, missing)); err != nil {
			t.Fatal(err)
		}
		_, err := engine.Open(ctx, url, time.Second)
		want := "may not run " + strings.ToUpper(strings.ReplaceAll(missing, "|", " "))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "+"+missing) || strings.Contains(err.Error(), "\n") {
			t.Errorf("without +%s: %v, want one line with %q", missing, err, want)
		}
	}
	// a Redis Cluster: the same user on every node, plus server.ACLClusterCommands
	setOnCluster := func(commands []string) {
		err := cluster.Client().ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return redistest.SetACLUser(ctx, n, user, pass, commands)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	defer cluster.Client().ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Do(ctx, "ACL", "DELUSER", user).Err()
	})
	curl := "redis+cluster://" + user + ":" + pass + "@" + cluster.Info.Addr
	setOnCluster(append(slices.Clone(server.ACLCommands), server.ACLClusterCommands...))
	crd, err := engine.Open(ctx, curl, 2*time.Second)
	if err != nil {
		t.Fatalf("the ACL user on the cluster: %v", err)
	}
	res, err := run.Run(ctx, crd, run.Config{Scenarios: []string{"boundary-burst"}}, nil, nil)
	crd.Close()
	for _, r := range res.Results {
		if err != nil || r.Errors > 0 {
			t.Errorf("the ACL user on the cluster: %v, %s %d errors", err, r.Algorithm, r.Errors)
		}
	}
	setOnCluster(server.ACLCommands)
	if _, err := engine.Open(ctx, curl, time.Second); err == nil || !strings.Contains(err.Error(), "may not run CLUSTER INFO") ||
		!strings.Contains(err.Error(), "+cluster|slots +cluster|info besides") {
		t.Errorf("the ACL user without the cluster commands: %v", err)
	}

	// keys outside ~ratelab:* are refused
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", user, "resetkeys", "~other:*").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Open(ctx, url, time.Second); err == nil || !strings.Contains(err.Error(), "may not use ratelab's keys") {
		t.Errorf("keys not granted: %v", err)
	}
}

// The measurement behind server.ACLCommands: with any one command removed,
// run or verify fails (and with all of them, TestACL, they work).
func TestACLMinimal(t *testing.T) {
	const user, pass = "ratelab-min", "pw"
	defer srv.Client().Do(ctx, "ACL", "DELUSER", user)
	c := redis.NewClient(&redis.Options{Addr: srv.Info.Addr, Username: user, Password: pass, MaxRetries: -1})
	defer c.Close()
	var needed, unneeded []string
	for _, cmd := range server.ACLCommands {
		if err := redistest.SetACLUser(ctx, srv.Client(), user, pass, redistest.Without(server.ACLCommands, cmd)); err != nil {
			t.Fatal(err)
		}
		srv.Client().ScriptFlush(ctx) // EVAL is only needed for scripts not yet cached
		c.Do(ctx, "CLIENT", "KILL", "USER", user)
		if err := aclWorkload(c); err != nil {
			needed = append(needed, cmd)
			t.Logf("-%s: %.150s", cmd, err)
		} else {
			unneeded = append(unneeded, cmd)
		}
		srv.Client().FlushAll(ctx) // what a refused UNLINK or SCAN left behind
	}
	t.Logf("needed: %v", needed)
	if len(unneeded) > 0 {
		t.Errorf("ratelab works without %v: drop them from server.ACLCommands", unneeded)
	}
	if !slices.Equal(needed, server.ACLCommands) {
		t.Errorf("needed %v", needed)
	}
}

// --redis container: the boundary-burst verdicts of one exec node, and no
// container left after Close.
func TestContainer(t *testing.T) {
	image := enginetest.Image(t)
	start := time.Now()
	rd, err := engine.OpenWith(ctx, "container", engine.Options{Image: image})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("container from %s at %s, Redis %s, up in %v", image, rd.Info.Addr, rd.Info.Version, time.Since(start).Round(time.Millisecond))
	closed := false
	defer func() {
		if !closed {
			rd.Close()
		}
	}()
	if rd.Info.Mode != "container" || !rd.Owned() {
		t.Errorf("info %+v owned %v", rd.Info, rd.Owned())
	}
	id := engine.ContainerID(rd)
	ids, err := engine.Containers(ctx, os.Getpid())
	if err != nil || id == "" || !slices.Contains(ids, id) {
		t.Fatalf("container %q not among this process's containers %v (%v)", id, ids, err)
	}
	cfg := run.Config{Scenarios: []string{"boundary-burst"}}
	sameVerdicts(t, "container", verdicts(t, srv.Redis, cfg), verdicts(t, rd, cfg))
	if err := rd.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	closed = true
	after, err := engine.Containers(ctx, os.Getpid())
	if err != nil || slices.Contains(after, id) {
		t.Errorf("container %.12s still exists after Close (%v)", id, err)
	}
}
