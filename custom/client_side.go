package custom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/vclock"
)

// ClientSide runs a script target's logic in ratelab instead of in Redis,
// as application code runs a limiter: the same file shape as a
// ScriptLimiter (KEYS and ARGV from the same templates, the same reply
// predicate), executed by a Lua VM in Go (package clientside), where every
// redis.call and redis.pcall is its own round trip to the real Redis and
// other clients' commands can come in between. Scripts may also use
// redis.pipeline({...}) (one round trip, not atomic),
// redis.transaction({...}) (MULTI/EXEC: atomic; false when a WATCHed key
// changed) and WATCH/UNWATCH on their connection.
//
// Time: on an injected clock the templates get that time, a TIME call is
// answered with it, and key TTLs run on it: on one Redis node every
// command goes through vclock's deadline table (vclock.Table, the Redis
// endpoint's mechanism), so the scripts the script EVALs read the same
// clock and TTLs as its plain commands; the table's hash and set are keys
// beside the decision's key ("<key>:ratelab:deadlines", "...:written").
// On a Cluster, TTL commands become deadlines kept here
// (vclock.Deadlines) and EVAL runs on Redis's clock. On Redis TIME
// everything goes to Redis as written.
//
// Allow makes one decision on a connection of a pool of dedicated RESP2
// connections (clientside.Pool); a race harness gives each simulated
// client its own (Dial) and runs decisions on it (DecideOn), one round trip
// at a time as its scheduler grants them. Safe for concurrent use.
type ClientSide struct {
	s      *ScriptLimiter
	script *clientside.Script
	rdb    any
	pool   *clientside.Pool
	expiry vclock.Deadlines
	table  *vclock.Table // nil on a Redis Cluster
	name   string
	desc   string
	caps   *algorithms.Capabilities
	decode func(algorithms.ScriptCall, any) (algorithms.Decision, error)
}

// ClientSider is a limiter whose decisions are separate Redis commands sent
// from the client (ClientSide, SlidingLogNaive): what the race family of
// verification drives, one dedicated connection per simulated client.
type ClientSider interface {
	algorithms.Limiter
	// Dial opens a dedicated connection for one simulated client, to the
	// node that holds key (clientside.Dial); close releases it.
	Dial(ctx context.Context, key string) (conn *redis.Conn, close func() error, err error)
	// DecideOn makes one decision with e (its connection, gate and log);
	// e.Now and e.Expiry are set here from at.
	DecideOn(ctx context.Context, e *clientside.Exec, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error)
}

var (
	_ ClientSider = (*ClientSide)(nil)
	_ Gated       = (*ClientSide)(nil)
)

// NewClientSide parses c as NewScript does and compiles its source for the
// client-side VM. rdb is a *redis.Client or *redis.ClusterClient (on a
// user's Redis, the guard's client: the connections inherit its user).
// Errors: NewScript's field errors; "script" for Lua that does not
// compile.
func NewClientSide(rdb redis.Scripter, c ScriptConfig) (*ClientSide, error) {
	s, err := NewScript(rdb, c)
	if err != nil {
		return nil, err
	}
	sc, err := clientside.Compile(c.Name, c.Source)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	cs := &ClientSide{s: s, script: sc, rdb: rdb, pool: clientside.NewPool(rdb), name: c.Name, decode: s.Decode}
	if _, node := rdb.(*redis.Client); node {
		cs.table = vclock.NewTable()
	}
	return cs, nil
}

// Name returns the script's name.
func (c *ClientSide) Name() string { return c.name }

// Describe is the script's description (ScriptLimiter.Describe) marked
// "client-side".
func (c *ClientSide) Describe() string {
	if c.desc != "" {
		return c.desc
	}
	return c.s.Describe() + ", client-side"
}

// Capabilities are the script's (ScriptLimiter.Capabilities).
func (c *ClientSide) Capabilities() algorithms.Capabilities {
	if c.caps != nil {
		return *c.caps
	}
	return c.s.Capabilities()
}

// Explain is ScriptLimiter.Explain for the script run client-side, whose
// own errors are the VM's (every error but a cancelled or timed-out call
// and a network error).
func (c *ClientSide) Explain(err error) error {
	if aside(err) {
		return err
	}
	return c.s.explain(err)
}

// AbsoluteExpiries returns none: on an injected clock the client-side VM
// runs EXPIREAT and its kin on that clock too.
func (c *ClientSide) AbsoluteExpiries() []vclock.AbsoluteExpiry { return nil }

// Dial implements ClientSider.
func (c *ClientSide) Dial(ctx context.Context, key string) (*redis.Conn, func() error, error) {
	return clientside.Dial(ctx, c.rdb, key)
}

// Allow implements algorithms.Limiter: one decision on a pooled dedicated
// connection.
func (c *ClientSide) Allow(ctx context.Context, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	conn, put, err := c.pool.Get(ctx, key)
	if err != nil {
		return algorithms.Decision{}, err
	}
	d, err := c.DecideOn(ctx, &clientside.Exec{Conn: conn}, key, cost, at)
	put(err != nil && ctx.Err() != nil) // a cancelled round trip may leave a reply behind
	return d, err
}

// DecideOn implements ClientSider. Errors: cost outside 1..limit wraps
// algorithms.ErrCostExceedsLimit; a template that cannot be filled, or a reply
// the predicate cannot judge, or a run stopped while its Lua ran
// (clientside.StoppedError), is a *ScriptError; the script's own errors and
// failed round trips are Run's (they name the script).
func (c *ClientSide) DecideOn(ctx context.Context, e *clientside.Exec, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	call, err := c.call(key, cost, at)
	if err != nil {
		return algorithms.Decision{}, err
	}
	e.Expiry, e.Table, e.Now = nil, nil, 0
	if t, virtual := at.Injected(); virtual {
		e.Now = t.UnixMicro()
		if c.table != nil {
			// the table's keys share the decision key's hash slot and
			// prefix (removed with the run's keys)
			e.Table, e.TableKey, e.WrittenKey = c.table, key+":ratelab:deadlines", key+":ratelab:written"
		} else {
			e.Expiry = &c.expiry
		}
	}
	args := make([]string, len(call.Args))
	for i, a := range call.Args {
		args[i] = fmt.Sprint(a)
	}
	reply, err := e.Run(ctx, c.script, call.Keys, args)
	if errors.Is(err, clientside.ErrStopped) {
		// its Lua ran past the call's bound or the memory bound: the
		// script's doing, not Redis's, and every call would do the same
		return algorithms.Decision{}, &ScriptError{err}
	}
	if err != nil {
		return algorithms.Decision{}, err // Run's errors name the script
	}
	d, err := c.decode(call, reply)
	if err != nil {
		return algorithms.Decision{}, fmt.Errorf("%s: %w", c.name, err)
	}
	return d, nil
}

// call fills the templates for one request, as ScriptLimiter.Call does but
// for the script as written (no rewrite for virtual time: the VM answers
// TIME itself).
func (c *ClientSide) call(key string, cost int64, at algorithms.Clock) (algorithms.ScriptCall, error) {
	s := c.s
	if err := algorithms.CheckCost(c.name, cost, s.limit.Count); err != nil {
		return algorithms.ScriptCall{}, err
	}
	v := s.values(key, cost)
	call := algorithms.ScriptCall{Cost: cost}
	if t, virtual := at.Injected(); virtual {
		v.Now = t
		call.DecidedAt = t.Truncate(time.Microsecond)
	} else if s.usesClock() {
		if ck := s.ClockKeys(); len(ck) > 0 {
			return algorithms.ScriptCall{}, &ScriptError{fmt.Errorf("%s: key template %q is built from the clock: it needs an injected clock (virtual or client), not Redis TIME", c.name, ck[0])}
		}
		v.Now = time.Now()
		call.DecidedAt = v.Now.Truncate(time.Microsecond)
	}
	var err error
	if call.Keys, err = s.fillKeys(v); err != nil {
		return algorithms.ScriptCall{}, err
	}
	call.Args = make([]any, len(s.args))
	for i, a := range s.args {
		if call.Args[i], err = a.Render(v); err != nil {
			return algorithms.ScriptCall{}, &ScriptError{fmt.Errorf("%s: ARGV[%d]: %w", c.name, i+1, err)}
		}
	}
	return call, nil
}

// Close closes the pool's idle connections.
func (c *ClientSide) Close() error { return c.pool.Close() }

// Gated is a limiter whose round trips to Redis a race scheduler grants
// one at a time (clientside.Interleave): the race family of verification
// drives it with one GatedClient per simulated client. ClientSide is one
// (its Lua VM's round trips); so is an exec target (its adapter's
// commands, gated at the Redis endpoint it talks to).
type Gated interface {
	algorithms.Limiter
	// GatedClient opens one simulated client, on the node that holds key.
	GatedClient(ctx context.Context, key string) (GatedClient, error)
}

// GatedClient is one simulated client of a Gated limiter. Not safe for
// concurrent use: one decision at a time.
type GatedClient interface {
	// Decide makes one decision, every round trip of it waiting on gate
	// first (its Round's Client set to client).
	Decide(ctx context.Context, client int, gate func(context.Context, *clientside.Round) error, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error)
	// Close releases the client.
	Close() error
}

// GatedClient implements Gated: a dedicated connection (Dial) whose
// decisions run on an Exec of their own (DecideOn).
func (c *ClientSide) GatedClient(ctx context.Context, key string) (GatedClient, error) {
	conn, closeConn, err := c.Dial(ctx, key)
	if err != nil {
		return nil, err
	}
	return &clientSideGated{cs: c, e: &clientside.Exec{Conn: conn}, close: closeConn}, nil
}

// clientSideGated is a GatedClient on ClientSide's dedicated connection.
type clientSideGated struct {
	cs    *ClientSide
	e     *clientside.Exec
	close func() error
}

func (g *clientSideGated) Decide(ctx context.Context, client int, gate func(context.Context, *clientside.Round) error, key string, cost int64, at algorithms.Clock) (algorithms.Decision, error) {
	g.e.Client, g.e.Gate = client, gate
	return g.cs.DecideOn(ctx, g.e, key, cost, at)
}

func (g *clientSideGated) Close() error { return g.close() }
