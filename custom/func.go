package custom

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom/endpoint"
	"github.com/ratelab/ratelab/limit"
)

// Request is one request a Func decides: Key names the limited subject
// (ratelab's key, to be used as the limiter's key or within it), Cost is
// its cost in units (1 or more), Now its instant (the virtual time of a
// virtual run; the Redis the Func is given answers TIME and expires keys
// at this instant).
type Request struct {
	Key  string
	Cost int64
	Now  time.Time
}

// Func is a rate limiter as a Go function: it decides req on rdb and
// says whether it is allowed. rdb is a client of an endpoint on the
// virtual clock (package endpoint), its own for the call: the function
// uses it as it would use its production Redis (a library such as
// go-redis/redis_rate runs unchanged on it), and must not keep it past
// the call. An error fails the decision.
type Func func(ctx context.Context, rdb redis.UniversalClient, req Request) (bool, error)

// FuncConfig configures a FuncLimiter.
type FuncConfig struct {
	// Name names the target in reports ("func" when empty).
	Name string
	// Fn is the limiter. Required.
	Fn Func
	// Limit is the limit it is verified against (Describe).
	Limit limit.Limit
	// Prefix names the endpoint's own keys; empty: "ratelab:func:<time>:".
	Prefix string
	// UnitCost: Fn decides one unit per request (it ignores
	// Request.Cost), so the harness sends cost 1 only
	// (Capabilities.TakesCost false).
	UnitCost bool
}

// FuncLimiter is an algorithms.Limiter made of a Func: each Allow runs
// the function on one client of a pool of endpoint clients (one call at a
// time per client), that client's clock first set to the decision's
// instant. Keys the function writes are deleted by Close. Safe for
// concurrent use.
type FuncLimiter struct {
	cfg  FuncConfig
	ep   *endpoint.Server
	mu   sync.Mutex
	idle []*funcClient
	all  []*funcClient
}

type funcClient struct {
	ep  *endpoint.Client
	rdb *redis.Client
}

var _ algorithms.Limiter = (*FuncLimiter)(nil)

// NewFunc starts an endpoint on rdb (one node, not a Cluster) for the
// function of c. Errors: a field error naming "func" when c.Fn is nil,
// "limit" for an invalid limit; endpoint.Start's.
func NewFunc(ctx context.Context, rdb redis.Scripter, c FuncConfig) (*FuncLimiter, error) {
	if c.Fn == nil {
		return nil, errors.New("func: required")
	}
	if err := c.Limit.Validate(); err != nil {
		return nil, err
	}
	node, ok := rdb.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("func: a Go function target needs one Redis node (*redis.Client), got %T", rdb)
	}
	if c.Name == "" {
		c.Name = "func"
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("ratelab:func:%d:", time.Now().UnixNano())
	}
	ep, err := endpoint.Start(ctx, endpoint.Config{Redis: node, Prefix: c.Prefix})
	if err != nil {
		return nil, err
	}
	return &FuncLimiter{cfg: c, ep: ep}, nil
}

// Name returns the configured name.
func (f *FuncLimiter) Name() string { return f.cfg.Name }

// Describe states the limit, marked as a Go function: "60 per 1m, Go function".
func (f *FuncLimiter) Describe() string { return f.cfg.Limit.String() + ", Go function" }

// Capabilities: an injected clock (the endpoint's, µs), weighted cost
// unless UnitCost, one state per key; the function's loops are unknown
// (not LoopFree).
func (f *FuncLimiter) Capabilities() algorithms.Capabilities {
	return algorithms.Capabilities{InjectsTime: true, TakesCost: !f.cfg.UnitCost, Resolution: time.Microsecond, UsesKeys: true}
}

// Allow runs the function for one request at at (on Redis TIME: the wall
// clock). Errors: cost outside 1..limit wraps
// algorithms.ErrCostExceedsLimit; the function's error, prefixed with the
// target's name.
func (f *FuncLimiter) Allow(ctx context.Context, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	if err := algorithms.CheckCost(f.cfg.Name, cost, f.cfg.Limit.Count); err != nil {
		return algorithms.Decision{}, err
	}
	now, ok := at.Injected()
	if !ok {
		now = time.Now()
	}
	now = now.Truncate(time.Microsecond)
	c, err := f.get()
	if err != nil {
		return algorithms.Decision{}, err
	}
	defer f.put(c)
	c.ep.SetNow(now)
	allowed, err := f.cfg.Fn(ctx, c.rdb, Request{Key: key, Cost: cost, Now: now})
	if err != nil {
		return algorithms.Decision{}, fmt.Errorf("%s: %w", f.cfg.Name, err)
	}
	return algorithms.Decision{Allowed: allowed, DecidedAt: now}, nil
}

func (f *FuncLimiter) get() (*funcClient, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.idle); n > 0 {
		c := f.idle[n-1]
		f.idle = f.idle[:n-1]
		return c, nil
	}
	ec, err := f.ep.NewClient()
	if err != nil {
		return nil, err
	}
	c := &funcClient{ep: ec, rdb: redis.NewClient(&redis.Options{Addr: ec.Addr(), MaxRetries: -1, PoolSize: 4})}
	f.all = append(f.all, c)
	return c, nil
}

func (f *FuncLimiter) put(c *funcClient) {
	f.mu.Lock()
	f.idle = append(f.idle, c)
	f.mu.Unlock()
}

// Keys returns the keys the function wrote (endpoint.Server.Keys).
func (f *FuncLimiter) Keys() []string { return f.ep.Keys() }

// Close closes the clients and the endpoint, deleting every key the
// function wrote. Safe to call twice.
func (f *FuncLimiter) Close() error {
	f.mu.Lock()
	all := f.all
	f.all, f.idle = nil, nil
	f.mu.Unlock()
	for _, c := range all {
		_ = c.rdb.Close() // its connections end with the endpoint's
	}
	return f.ep.Close()
}
