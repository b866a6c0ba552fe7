package engine

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratelab/ratelab/measure"
	"github.com/redis/go-redis/v9"
)

// ClusterMasters is the number of masters `--redis cluster` starts.
const ClusterMasters = 3

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// startCluster starts a local Redis Cluster: ClusterMasters redis-server
// processes from PATH with --cluster-enabled yes on free loopback ports
// (client and bus ports), each given an equal range of the hash slots with
// CLUSTER ADDSLOTSRANGE and introduced with CLUSTER MEET, and returns once
// every node reports cluster_state:ok and knows all masters. Its nodes.conf
// files live in a temporary directory; Close stops the processes and
// removes it.
//
// It waits up to timeout for the cluster; its client dials with dial.
func startCluster(ctx context.Context, timeout, dial time.Duration) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: --redis cluster starts redis-server from PATH, and it is not there (Debian: apt-get install redis-server)", ErrNoRedis)
	}
	dir, err := os.MkdirTemp("", "ratelab-cluster-")
	if err != nil {
		return nil, fmt.Errorf("start a Redis Cluster: %w", err)
	}
	var procs []*process
	stop := func() error {
		var wg sync.WaitGroup
		errs := make([]error, len(procs))
		for i, p := range procs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = p.stop() }()
		}
		wg.Wait()
		_ = os.RemoveAll(dir)
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	fail := func(err error) (*Redis, error) {
		_ = stop()
		return nil, fmt.Errorf("start a Redis Cluster: %w", err)
	}
	deadline := time.Now().Add(timeout)
	used := map[int]bool{}
	for i := 0; i < ClusterMasters; i++ {
		var p *process
		var lastErr error
		for attempt := 0; attempt < 3 && p == nil; attempt++ {
			port, bus, err := freePortPair(used)
			if err != nil {
				return fail(err)
			}
			p, lastErr = spawnRedis(ctx, bin, port, time.Until(deadline), dial, []string{
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
		addrs[i] = p.addr
		lo, hi := i*clusterSlots/len(procs), (i+1)*clusterSlots/len(procs)-1
		if err := p.client.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fail(fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", p.addr, err))
		}
		if err := p.client.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fail(fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %w", p.addr, lo, hi, err))
		}
	}
	for _, p := range procs[1:] {
		host, port, _ := net.SplitHostPort(p.addr)
		bus := busPort(p)
		if err := procs[0].client.Do(ctx, "CLUSTER", "MEET", host, port, bus).Err(); err != nil {
			return fail(fmt.Errorf("%s: CLUSTER MEET %s: %w", procs[0].addr, p.addr, err))
		}
	}
	for _, p := range procs {
		if err := waitClusterOK(ctx, p.client, len(procs), deadline); err != nil {
			return fail(fmt.Errorf("%s: %w", p.addr, err))
		}
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: dial, MaxRetries: -1, ContextTimeoutEnabled: true})
	r := &Redis{Client: c, Info: measure.RedisInfo{Mode: "cluster", Addr: strings.Join(addrs, ","), Version: procs[0].version}, stop: stop}
	if err := r.clusterReady(ctx, time.Until(deadline)); err != nil {
		_ = c.Close()
		return fail(err)
	}
	return r, nil
}

// busPort returns the --cluster-port argument p was started with.
func busPort(p *process) string {
	args := p.cmd.Args
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
		p, err := freePort()
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
			f := InfoFields(info)
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

// clusterReady checks that every master of the cluster answers PING, reads
// the version, and requires cluster_state:ok.
func (r *Redis) clusterReady(ctx context.Context, timeout time.Duration) error {
	cc := r.Client.(*redis.ClusterClient)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc.ReloadState(cctx)
	var mu sync.Mutex
	var masters []string
	err := cc.ForEachMaster(cctx, func(ctx context.Context, node *redis.Client) error {
		if err := node.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		mu.Lock()
		masters = append(masters, node.Options().Addr)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	if len(masters) == 0 {
		return fmt.Errorf("the cluster has no master serving slots")
	}
	info, err := cc.ClusterInfo(cctx).Result()
	if err != nil {
		return err
	}
	if st := InfoFields(info)["cluster_state"]; st != "ok" {
		return fmt.Errorf("cluster_state is %s, not ok (slots unassigned or a master down)", st)
	}
	sinfo, err := cc.Info(cctx, "server").Result()
	if err != nil {
		return err
	}
	r.Info.Version = InfoFields(sinfo)["redis_version"]
	return nil
}

// isClusterURL reports whether spec names a Redis Cluster: the
// redis+cluster:// and rediss+cluster:// schemes, or go-redis's cluster URL
// (redis://host:port?addr=host:port...).
func isClusterURL(spec string) bool {
	if strings.HasPrefix(spec, "redis+cluster://") || strings.HasPrefix(spec, "rediss+cluster://") {
		return true
	}
	if !strings.HasPrefix(spec, "redis://") && !strings.HasPrefix(spec, "rediss://") {
		return false
	}
	u, err := url.Parse(spec)
	return err == nil && u.Query().Has("addr")
}

// ClusterOptions parses a cluster URL: redis+cluster://[user:password@]
// host:port[,host:port...][?option=value...] (rediss+cluster:// for TLS),
// where the hosts are seeds (any node of the cluster; more seeds survive a
// node being down), or go-redis's own form
// redis://[user:password@]host:port?addr=host:port&addr=host:port. Options
// are go-redis's cluster URL options (dial_timeout, read_timeout, ...).
func ClusterOptions(spec string) (*redis.ClusterOptions, error) {
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return nil, fmt.Errorf("not a URL")
	}
	if base, isCluster := strings.CutSuffix(scheme, "+cluster"); isCluster {
		// userinfo@hosts[/path][?query]
		end := len(rest)
		if i := strings.IndexAny(rest, "/?"); i >= 0 {
			end = i
		}
		authority, tail := rest[:end], rest[end:]
		userinfo := ""
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			userinfo, authority = authority[:at+1], authority[at+1:]
		}
		var hosts []string
		for _, h := range strings.Split(authority, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(h); err != nil {
				return nil, fmt.Errorf("seed %q: want host:port", h)
			}
			hosts = append(hosts, h)
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("no seed address: want %s://host:port[,host:port...]", scheme)
		}
		path, query, _ := strings.Cut(tail, "?")
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, err
		}
		for _, h := range hosts[1:] {
			q.Add("addr", h)
		}
		spec = base + "://" + userinfo + hosts[0] + path
		if len(q) > 0 {
			spec += "?" + q.Encode()
		}
	}
	return redis.ParseClusterURL(spec)
}

// openClusterURL connects to the user's Redis Cluster through its seeds.
func openClusterURL(ctx context.Context, spec string, o Options) (*Redis, error) {
	opt, err := ClusterOptions(spec)
	if err != nil {
		return nil, fmt.Errorf("bad Redis Cluster URL %q: %w", RedactURL(spec), err)
	}
	opt.DialTimeout = o.Timeout
	opt.ReadTimeout = o.Timeout
	opt.WriteTimeout = o.Timeout
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true // a per-call deadline (--timeout) bounds each command
	if opt.TLSConfig != nil && o.RootCAs != nil {
		opt.TLSConfig.RootCAs = o.RootCAs
	}
	seeds := strings.Join(opt.Addrs, ",")
	if err := probeSeeds(ctx, opt, o.Timeout); err != nil {
		return nil, err
	}
	c := redis.NewClusterClient(opt)
	r := &Redis{Client: c, Info: measure.RedisInfo{Mode: "cluster-url", Addr: seeds}}
	if err := r.clusterReady(ctx, o.Timeout); err != nil {
		c.Close()
		if strings.Contains(err.Error(), "NOPERM") {
			return nil, fmt.Errorf("%w (a Redis Cluster also needs +%s)", connError(seeds, opt.Username, opt.TLSConfig != nil, err),
				strings.Join(ACLClusterCommands, " +"))
		}
		return nil, fmt.Errorf("Redis Cluster at %s: %s", seeds, oneLine(err.Error()))
	}
	if err := r.checkAccessWithin(ctx, o.Timeout); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

// probeSeeds connects to every seed at once (one PING each, within
// timeout) and returns nil when any answers, else the failure of each in
// one line: unreachable, authentication, TLS, or not a cluster node.
func probeSeeds(ctx context.Context, opt *redis.ClusterOptions, timeout time.Duration) error {
	errs := make([]error, len(opt.Addrs))
	var wg sync.WaitGroup
	for i, addr := range opt.Addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{
				Addr: addr, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
				Protocol: opt.Protocol, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
				MaxRetries: -1, DialerRetries: 1,
			})
			defer c.Close()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := c.Ping(pctx).Err()
			if err == nil {
				err = c.ClusterInfo(pctx).Err()
			}
			if err != nil {
				if strings.Contains(err.Error(), "cluster support disabled") {
					errs[i] = fmt.Errorf("%s is not a Redis Cluster node (cluster support disabled): use redis://%s for a single server", addr, addr)
				} else {
					errs[i] = connError(addr, opt.Username, opt.TLSConfig != nil, err)
				}
			}
		}()
	}
	wg.Wait()
	var msgs []string
	same := true
	for i, err := range errs {
		if err == nil {
			return nil
		}
		msgs = append(msgs, err.Error())
		if strings.ReplaceAll(msgs[i], opt.Addrs[i], "") != strings.ReplaceAll(msgs[0], opt.Addrs[0], "") {
			same = false
		}
	}
	if same && len(msgs) > 1 && !strings.HasPrefix(msgs[0], "cannot reach") {
		return fmt.Errorf("every Redis Cluster seed (%s) refused: %s", strings.Join(opt.Addrs, ", "), msgs[0])
	}
	if len(msgs) == 1 {
		if m, ok := strings.CutPrefix(msgs[0], "cannot reach Redis at "); ok {
			return fmt.Errorf("cannot reach Redis Cluster seed %s", m)
		}
		return errs[0]
	}
	return fmt.Errorf("no Redis Cluster seed answered: %s", strings.Join(msgs, "; "))
}

// NodeKeys is one master of a cluster (or the one server) and how many of
// a prefix's keys it holds.
type NodeKeys struct {
	// Addr is the master's address as the client reaches it.
	Addr string `json:"addr"`
	// Keys is the number of keys under the prefix on this master.
	Keys int64 `json:"keys"`
	// UsedMemoryBytes is the master's INFO used_memory when counted.
	UsedMemoryBytes int64 `json:"used_memory_bytes"`
}

// KeysByNode counts the keys under prefix on every master of c (SCAN per
// master) and reads each master's used_memory, in address order. A single
// server gives one entry.
func KeysByNode(ctx context.Context, c redis.UniversalClient, prefix string) ([]NodeKeys, error) {
	count := func(ctx context.Context, node *redis.Client) (NodeKeys, error) {
		keys, err := ScanKeys(ctx, node, prefix)
		if err != nil {
			return NodeKeys{}, err
		}
		nk := NodeKeys{Addr: node.Options().Addr, Keys: int64(len(keys))}
		info, err := node.Info(ctx, "memory").Result()
		if err != nil {
			return nk, err
		}
		nk.UsedMemoryBytes, _ = strconv.ParseInt(InfoFields(info)["used_memory"], 10, 64)
		return nk, nil
	}
	switch cc := c.(type) {
	case *redis.Client:
		nk, err := count(ctx, cc)
		return []NodeKeys{nk}, err
	case *redis.ClusterClient:
		var mu sync.Mutex
		var out []NodeKeys
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			nk, err := count(ctx, node)
			mu.Lock()
			out = append(out, nk)
			mu.Unlock()
			return err
		})
		slices.SortFunc(out, func(a, b NodeKeys) int { return strings.Compare(a.Addr, b.Addr) })
		return out, err
	}
	return nil, fmt.Errorf("KeysByNode: unsupported client %T", c)
}

// Nodes returns the servers capacity measures memory on, and the
// database number: the server itself, or every master of a cluster (db 0).
func Nodes(ctx context.Context, c redis.UniversalClient) ([]*redis.Client, int, error) {
	switch cc := c.(type) {
	case *redis.Client:
		return []*redis.Client{cc}, cc.Options().DB, nil
	case *redis.ClusterClient:
		var mu sync.Mutex
		var nodes []*redis.Client
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			nodes = append(nodes, node)
			mu.Unlock()
			return nil
		})
		slices.SortFunc(nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
		return nodes, 0, err
	}
	return nil, 0, fmt.Errorf("capacity needs a single Redis server or a Redis Cluster, not %T", c)
}
