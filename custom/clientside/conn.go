package clientside

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Dial opens a connection of its own, as one application instance has, to
// the server rdb is a client of; on a Redis Cluster to the master that
// holds key's slot (a client-side script's keys must share one slot, as
// an atomic script's). The connection speaks RESP2, so replies reach a
// script as Redis hands them to scripts, and uses rdb's options otherwise
// (address, user, password, TLS: a guard user's client stays guarded).
// close releases it. rdb is a *redis.Client or *redis.ClusterClient;
// anything else is an error.
func Dial(ctx context.Context, rdb any, key string) (conn *redis.Conn, close func() error, err error) {
	var node *redis.Client
	switch c := rdb.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		if node, err = c.MasterForKey(ctx, key); err != nil {
			return nil, nil, fmt.Errorf("client-side: the Cluster node of %q: %w", key, err)
		}
	default:
		return nil, nil, fmt.Errorf("client-side: needs a Redis client or Cluster client, got %T", rdb)
	}
	opts := *node.Options()
	opts.Protocol = 2
	opts.PoolSize, opts.MinIdleConns, opts.MaxIdleConns = 1, 0, 1
	cl := redis.NewClient(&opts)
	cn := cl.Conn()
	return cn, func() error {
		err := cn.Close()
		if cerr := cl.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}

// Pool hands out dedicated connections (Dial) for decisions made outside
// a scheduled interleaving, and keeps them for the next decision: one
// connection per decision under way, per Cluster node. Safe for concurrent
// use; the zero Pool is not ready: use NewPool.
type Pool struct {
	rdb  any
	mu   sync.Mutex
	idle map[string][]pooled // node address -> idle connections
}

type pooled struct {
	conn  *redis.Conn
	close func() error
}

// NewPool returns a pool of connections to rdb (see Dial).
func NewPool(rdb any) *Pool { return &Pool{rdb: rdb, idle: map[string][]pooled{}} }

// Get returns a connection for key, and put, which gives it back (or
// closes it when broken is true).
func (p *Pool) Get(ctx context.Context, key string) (*redis.Conn, func(broken bool), error) {
	addr := ""
	if cc, ok := p.rdb.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("client-side: the Cluster node of %q: %w", key, err)
		}
		addr = node.Options().Addr
	}
	p.mu.Lock()
	if l := p.idle[addr]; len(l) > 0 {
		c := l[len(l)-1]
		p.idle[addr] = l[:len(l)-1]
		p.mu.Unlock()
		return c.conn, p.putter(addr, c), nil
	}
	p.mu.Unlock()
	conn, closeFn, err := Dial(ctx, p.rdb, key)
	if err != nil {
		return nil, nil, err
	}
	c := pooled{conn, closeFn}
	return conn, p.putter(addr, c), nil
}

func (p *Pool) putter(addr string, c pooled) func(bool) {
	return func(broken bool) {
		if broken {
			_ = c.close()
			return
		}
		p.mu.Lock()
		p.idle[addr] = append(p.idle[addr], c)
		p.mu.Unlock()
	}
}

// Close closes the idle connections.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for a, l := range p.idle {
		for _, c := range l {
			if err := c.close(); err != nil && first == nil {
				first = err
			}
		}
		delete(p.idle, a)
	}
	return first
}
