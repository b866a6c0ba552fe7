// Package execlimiter verifies a rate limiter that lives in application
// code, in any language, unchanged: ratelab starts an adapter, `sh -c
// COMMAND`, once per simulated client, and asks it for one decision at a
// time over a line protocol (docs/exec.md):
//
//	stdin:  {"key": "user", "cost": 1, "now_us": 1767225600000000}
//	stdout: {"allowed": true, "remaining": 59, "retry_after_ms": 0}
//
// "remaining" and "retry_after_ms" are optional. Each process gets the
// environment REDIS_URL (its own client of an endpoint.Server: the Redis
// protocol served on loopback, every command on the virtual clock),
// RATELAB_LIMIT (the limit's count) and RATELAB_WINDOW_MS (its window in
// ms). now_us is the instant of the decision in µs since the Unix epoch:
// the adapter sets its library's clock from it (Python's time.time,
// Node's Date.now, Ruby's Time.now); the endpoint runs the Redis side
// (TIME, key TTLs) on the same instant.
package execlimiter

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/custom/endpoint"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
)

// DefaultTimeout bounds an adapter's answer when Config.Timeout is zero,
// DefaultStartup its first answer when Config.Startup is zero, and
// DefaultProcesses is the pool's size when Config.Processes is zero.
const (
	DefaultTimeout   = 5 * time.Second
	DefaultStartup   = 30 * time.Second
	DefaultProcesses = 4
)

// Config describes an exec target.
type Config struct {
	// Name labels the target's rows; "" means the command itself.
	Name string
	// Command is run as `sh -c Command`, once per process. Required.
	Command string
	// Dir is the processes' working directory; "" means ratelab's.
	Dir string
	// Limit is what the adapter is told to enforce (RATELAB_LIMIT,
	// RATELAB_WINDOW_MS) and what a cost is checked against.
	Limit limit.Limit
	// Timeout bounds each answer but a process's first; zero means
	// DefaultTimeout. A process past it is killed and the call is an
	// error.
	Timeout time.Duration
	// Startup bounds a process's first answer, its start-up included (an
	// interpreter loading its libraries takes seconds on a loaded
	// machine); zero means DefaultStartup, and it is never below Timeout.
	Startup time.Duration
	// Processes is how many processes Allow keeps at most (a decision
	// waits for an idle one beyond): an interpreter's start-up costs
	// more than many decisions, and a machine of few cores gains nothing
	// from more at once. A race's clients (GatedClient) each hold one,
	// beyond it when they must. Zero means DefaultProcesses.
	Processes int
	// Prefix names the endpoint's own keys (endpoint.Config.Prefix); ""
	// means "ratelab:exec:<random>:". The adapters' keys are named by
	// the adapters (the keys they are handed, with their library's own
	// prefix); every one of them is removed by Close.
	Prefix string
}

// Validate returns a field error naming "command" (empty), "timeout",
// "startup" or "processes" (negative), or the limit's
// (limit.Limit.Validate).
func (c Config) Validate() error {
	switch {
	case c.Command == "":
		return field.Errorf("command", "empty: give the command that starts the adapter")
	case c.Timeout < 0:
		return field.Errorf("timeout", "must be >= 0, got %s", c.Timeout)
	case c.Startup < 0:
		return field.Errorf("startup", "must be >= 0, got %s", c.Startup)
	case c.Processes < 0:
		return field.Errorf("processes", "must be >= 0, got %d", c.Processes)
	}
	return c.Limit.Validate()
}

// Limiter is an exec target: a pool of adapter processes, each on a
// client of its own of one endpoint.Server (REDIS_URL), one decision at a
// time per process. The pool starts a process when a decision finds none
// idle, up to Config.Processes; an idle process is reused. Allow is safe for concurrent use; Close ends every
// process and removes every key the adapters wrote.
type Limiter struct {
	cfg Config
	ep  *endpoint.Server

	mu       sync.Mutex
	idle     []*worker
	all      map[*worker]bool
	freed    chan struct{} // closed (and replaced) when a worker is put back or dropped
	starting int           // processes being started by get
	closed   bool
	stop     func() bool // stops the watch of the context given to New
}

// worker is one adapter process and its client.
type worker struct {
	p      *proc
	client *endpoint.Client
}

var (
	_ algorithms.Limiter = (*Limiter)(nil)
	_ custom.Gated       = (*Limiter)(nil)
)

// New returns the exec target of cfg, its processes' Redis commands
// served by an endpoint in front of rdb (one node: endpoint.Config). No
// process starts before the first decision. When ctx ends, every process
// is killed (as by Close). Errors: Validate's; endpoint.Start's.
func New(ctx context.Context, rdb *redis.Client, cfg Config) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Processes == 0 {
		cfg.Processes = DefaultProcesses
	}
	cfg.Startup = max(cmp.Or(cfg.Startup, DefaultStartup), cfg.Timeout)
	if cfg.Prefix == "" {
		var b [6]byte
		_, _ = rand.Read(b[:]) // never fails (Go 1.24)
		cfg.Prefix = "ratelab:exec:" + hex.EncodeToString(b[:]) + ":"
	}
	ep, err := endpoint.Start(ctx, endpoint.Config{Redis: rdb, Prefix: cfg.Prefix})
	if err != nil {
		return nil, err
	}
	l := &Limiter{cfg: cfg, ep: ep, all: map[*worker]bool{}, freed: make(chan struct{})}
	l.stop = context.AfterFunc(ctx, func() { _ = l.Close() })
	return l, nil
}

// Name returns Config.Name, else the command.
func (l *Limiter) Name() string {
	if l.cfg.Name != "" {
		return l.cfg.Name
	}
	return l.cfg.Command
}

// Describe returns the limit and how it is reached.
func (l *Limiter) Describe() string { return l.cfg.Limit.String() + " (exec)" }

// Capabilities implements algorithms.Limiter: the adapter is handed the
// clock (now_us), takes costs and keys; its resolution is taken as 1 ms,
// the coarsest a library commonly reads (Date.now, key TTLs in ms), so a
// set of decisions counts as within a window only when no clock of 1 ms
// could have seen it spanning the whole window.
func (l *Limiter) Capabilities() algorithms.Capabilities {
	return algorithms.Capabilities{InjectsTime: true, TakesCost: true, Resolution: time.Millisecond, UsesKeys: true}
}

// Allow asks one idle process (starting one when none is idle and fewer
// than Config.Processes are alive; else waiting for one) for a decision
// at the instant of at (the wall clock for Redis TIME). Errors: a cost
// outside 1..limit wraps algorithms.ErrCostExceedsLimit; a process that
// cannot start, exits, answers late or prints a bad line is a
// *custom.ScriptError wrapping an *AdapterError (every call would fail
// alike: a run stops at it); ctx's error when it ends first.
func (l *Limiter) Allow(ctx context.Context, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	if err := algorithms.CheckCost(l.Name(), cost, l.cfg.Limit.Count); err != nil {
		return algorithms.Decision{}, err
	}
	w, err := l.get(ctx, false)
	if err != nil {
		return algorithms.Decision{}, err
	}
	d, err := l.decide(ctx, w, key, cost, at)
	l.put(w, err)
	return d, err
}

// decide asks w for one decision.
func (l *Limiter) decide(ctx context.Context, w *worker, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	t, ok := at.Injected()
	if !ok {
		t = time.Now()
	}
	t = t.Truncate(time.Microsecond)
	w.client.SetNow(t)
	a, err := w.p.ask(ctx, request{Key: key, Cost: cost, NowUS: t.UnixMicro()}, l.cfg.Timeout, l.cfg.Startup)
	if err != nil {
		if ae := new(AdapterError); errors.As(err, &ae) {
			return algorithms.Decision{}, &custom.ScriptError{Err: err}
		}
		return algorithms.Decision{}, err
	}
	d := algorithms.Decision{Allowed: *a.Allowed, DecidedAt: t}
	if a.Remaining != nil {
		d.Remaining = *a.Remaining
	}
	if a.RetryAfterMS != nil && !d.Allowed {
		d.RetryAfter = time.Duration(*a.RetryAfterMS * float64(time.Millisecond)).Truncate(time.Microsecond)
	}
	return d, nil
}

// errClosed is a decision asked of a closed Limiter.
var errClosed = errors.New("the exec target is closed")

// get returns an idle worker, or starts one when fewer than
// Config.Processes are alive (or always, with force), or waits for one
// to be put back: a wait that ctx's deadline does not bound (the
// processes' answers are bounded; a decision's bound is its own answer's).
func (l *Limiter) get(ctx context.Context, force bool) (*worker, error) {
	ctx, release := withoutDeadline(ctx)
	defer release()
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, errClosed
		}
		if n := len(l.idle); n > 0 {
			w := l.idle[n-1]
			l.idle = l.idle[:n-1]
			l.mu.Unlock()
			return w, nil
		}
		if force || len(l.all)+l.starting < l.cfg.Processes {
			l.starting++
			l.mu.Unlock()
			w, err := l.start()
			l.mu.Lock()
			l.starting--
			switch {
			case err == nil && l.closed:
				w.p.kill()
				w, err = nil, errClosed
			case err == nil:
				l.all[w] = true
			}
			if err != nil {
				l.wake() // its place is free again
			}
			l.mu.Unlock()
			return w, err
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// wake tells the decisions waiting in get that a worker was put back or
// dropped. l.mu is held.
func (l *Limiter) wake() {
	close(l.freed)
	l.freed = make(chan struct{})
}

// start starts one process on a new client of the endpoint.
func (l *Limiter) start() (*worker, error) {
	c, err := l.ep.NewClient()
	if err != nil {
		return nil, fmt.Errorf("exec %q: its Redis endpoint: %w", l.cfg.Command, err)
	}
	env := []string{"REDIS_URL=" + c.URL(),
		"RATELAB_LIMIT=" + strconv.FormatInt(l.cfg.Limit.Count, 10),
		"RATELAB_WINDOW_MS=" + strconv.FormatInt(l.cfg.Limit.Window.Milliseconds(), 10)}
	p, err := startProc(l.cfg.Command, l.cfg.Dir, env)
	if err != nil {
		return nil, &custom.ScriptError{Err: err}
	}
	return &worker{p: p, client: c}, nil
}

// put gives w back after a decision that ended with err: a worker whose
// process was killed (any error but a cost refused before asking) is
// dropped.
func (l *Limiter) put(w *worker, err error) {
	w.client.SetGate(nil)
	if err != nil && !errors.Is(err, algorithms.ErrCostExceedsLimit) {
		w.p.kill()
		l.mu.Lock()
		delete(l.all, w)
		l.wake()
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		w.p.kill()
		return
	}
	l.idle = append(l.idle, w)
	l.wake()
}

// Processes returns the process ids of the adapters alive, for tests and
// diagnostics.
func (l *Limiter) Processes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for w := range l.all {
		out = append(out, w.p.pid())
	}
	return out
}

// Close ends every process (stdin closed, then its process group killed)
// and waits for them, then closes the endpoint, which removes every key
// the adapters wrote (endpoint.Server.Close, whose error it returns); a
// decision under way fails. Safe to call more than once.
func (l *Limiter) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	ws := make([]*worker, 0, len(l.all))
	for w := range l.all {
		ws = append(ws, w)
	}
	l.idle, l.all = nil, map[*worker]bool{}
	l.mu.Unlock()
	if l.stop != nil {
		l.stop()
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.p.close()
		}()
	}
	wg.Wait()
	return l.ep.Close()
}

// GatedClient implements custom.Gated: one process of the pool (a new one
// when none is idle, beyond Config.Processes if it must: a race's
// clients go at once or not at all), held by a simulated client of a race
// until its Close. key is unused (one endpoint serves every key).
func (l *Limiter) GatedClient(ctx context.Context, _ string) (custom.GatedClient, error) {
	w, err := l.get(ctx, true)
	if err != nil {
		return nil, err
	}
	return &gated{l: l, w: w}, nil
}

// gated is a worker held by one simulated client of a race.
type gated struct {
	l   *Limiter
	w   *worker
	err error // the first decision's error that killed the process
}

// Decide makes one decision with every round trip of the process to
// Redis waiting on gate (its Round numbered client, ReadBefore set once a
// read of the decision went).
func (g *gated) Decide(ctx context.Context, client int, gate func(context.Context, *clientside.Round) error, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	if g.err != nil {
		return algorithms.Decision{}, g.err
	}
	if err := algorithms.CheckCost(g.l.Name(), cost, g.l.cfg.Limit.Count); err != nil {
		return algorithms.Decision{}, err
	}
	var readBefore atomic.Bool
	g.w.client.SetGate(func(ctx context.Context, r *clientside.Round) error {
		r.Client, r.ReadBefore = client, readBefore.Load()
		err := gate(ctx, r)
		if r.Read {
			readBefore.Store(true)
		}
		return err
	})
	d, err := g.l.decide(ctx, g.w, key, cost, at)
	g.w.client.SetGate(nil)
	if err != nil {
		g.err = err
	}
	return d, err
}

// Close gives the process back to the pool (or drops it when it was
// killed).
func (g *gated) Close() error {
	g.l.put(g.w, g.err)
	return nil
}
