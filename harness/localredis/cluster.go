package localredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/measure"
	"github.com/redis/go-redis/v9"
)

// ClusterMasters is the number of masters StartCluster starts (those of
// `--redis cluster`).
const ClusterMasters = 3

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// StartCluster starts a local Redis Cluster: ClusterMasters redis-server
// processes from PATH with --cluster-enabled yes on free loopback ports
// (client and bus ports), each given an equal range of the hash slots with
// CLUSTER ADDSLOTSRANGE and introduced with CLUSTER MEET, and returns once
// every node reports cluster_state:ok and knows all masters. Its nodes.conf
// files live in a temporary directory; Close stops the processes and
// removes it.
//
// It waits up to timeout for the cluster; its client dials with dial. The
// result is a *server.Redis of Mode "cluster". Errors wrap ErrNoServer, or
// say which node failed and why.
func StartCluster(ctx context.Context, timeout, dial time.Duration) (*server.Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoServer
	}
	SweepClusterDirs() // those of clusters whose ratelab was killed
	dir, err := os.MkdirTemp("", clusterDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("start a Redis Cluster: %w", err)
	}
	var procs []*Process
	stop := func() error {
		var wg sync.WaitGroup
		errs := make([]error, len(procs))
		for i, p := range procs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = p.Stop() }()
		}
		wg.Wait()
		_ = os.RemoveAll(dir) // the nodes' config files in the temp dir; the servers' stop is what is said
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	fail := func(err error) (*server.Redis, error) {
		// servers that would not stop are said with the error
		return nil, errors.Join(fmt.Errorf("start a Redis Cluster: %w", err), stop())
	}
	deadline := time.Now().Add(timeout)
	used := map[int]bool{}
	for i := 0; i < ClusterMasters; i++ {
		var p *Process
		var lastErr error
		for attempt := 0; attempt < 3 && p == nil; attempt++ {
			port, bus, err := freePortPair(used)
			if err != nil {
				return fail(err)
			}
			p, lastErr = Spawn(ctx, bin, port, time.Until(deadline), dial, []string{
				"--cluster-enabled", "yes",
				"--cluster-port", strconv.Itoa(bus),
				"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
				"--cluster-node-timeout", "5000",
				"--dir", dir,
			})
		}
		if p == nil {
			return fail(lastErr)
		}
		procs = append(procs, p)
	}
	addrs := make([]string, len(procs))
	for i, p := range procs {
		addrs[i] = p.Addr
		lo, hi := i*clusterSlots/len(procs), (i+1)*clusterSlots/len(procs)-1
		if err := p.Client.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fail(fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", p.Addr, err))
		}
		if err := p.Client.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fail(fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %w", p.Addr, lo, hi, err))
		}
	}
	for _, p := range procs[1:] {
		host, port, _ := net.SplitHostPort(p.Addr)
		bus := busPort(p)
		if err := procs[0].Client.Do(ctx, "CLUSTER", "MEET", host, port, bus).Err(); err != nil {
			return fail(fmt.Errorf("%s: CLUSTER MEET %s: %w", procs[0].Addr, p.Addr, err))
		}
	}
	for _, p := range procs {
		if err := waitClusterOK(ctx, p.Client, len(procs), deadline); err != nil {
			return fail(fmt.Errorf("%s: %w", p.Addr, err))
		}
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: dial, MaxRetries: -1, ContextTimeoutEnabled: true})
	server.Track(c)
	version, err := server.ClusterReady(ctx, c, time.Until(deadline))
	if err != nil {
		_ = c.Close() // a client that did not reach the cluster: err says why
		return fail(err)
	}
	return server.New(c, measure.RedisInfo{Mode: "cluster", Addr: strings.Join(addrs, ","), Version: version}, stop), nil
}

// busPort returns the --cluster-port argument p was started with.
func busPort(p *Process) string {
	args := p.Cmd.Args
	for i, a := range args {
		if a == "--cluster-port" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// freePortPair returns two distinct free loopback ports not in used (and marks them used).
func freePortPair(used map[int]bool) (int, int, error) {
	var got []int
	for len(got) < 2 {
		p, err := FreePort()
		if err != nil {
			return 0, 0, err
		}
		if !used[p] && !slices.Contains(got, p) {
			got = append(got, p)
		}
	}
	used[got[0]], used[got[1]] = true, true
	return got[0], got[1], nil
}

// waitClusterOK waits until node reports cluster_state:ok, all slots
// assigned and n known nodes, or deadline passes.
func waitClusterOK(ctx context.Context, node *redis.Client, n int, deadline time.Time) error {
	var last string
	for {
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil {
			f := server.InfoFields(info)
			if f["cluster_state"] == "ok" && f["cluster_slots_assigned"] == strconv.Itoa(clusterSlots) &&
				f["cluster_known_nodes"] == strconv.Itoa(n) {
				return nil
			}
			last = fmt.Sprintf("cluster_state:%s, %s slots assigned, %s of %d nodes known",
				f["cluster_state"], f["cluster_slots_assigned"], f["cluster_known_nodes"], n)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster did not form in time (%s)", last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterDirPrefix begins the name of a cluster's temporary directory (in
// os.TempDir), followed by the pid of the ratelab that made it.
const clusterDirPrefix = "ratelab-cluster-"

// SweepClusterDirs removes the temporary directories of `--redis cluster`
// left by a ratelab that no longer runs (a kill -9 skips Close; the
// servers die with it, their directory stays), and returns their paths.
// Directories of live processes, and names it did not make, are left.
func SweepClusterDirs() []string {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), clusterDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // alive, or not ours to know
		}
		path := filepath.Join(os.TempDir(), e.Name())
		if os.RemoveAll(path) == nil {
			removed = append(removed, path)
		}
	}
	return removed
}
