// Package endpoint serves the Redis protocol on loopback in front of a
// trial's Redis and puts every command of every client on a virtual clock,
// so that a rate limiter's own code (a Go, Python or Ruby library, unchanged)
// can be verified the way ratelab verifies a Lua script: each simulated
// client gets a listener of its own (NewClient), its requests run at the
// instant the harness sets (Client.SetNow), and its round trips can be
// granted one at a time by the race family's scheduler (Client.SetGate).
//
// What is virtual: TIME answers the client's instant; key expiry (EXPIRE,
// PEXPIRE, EXPIREAT, PEXPIREAT, SET EX|PX|EXAT|PXAT|KEEPTTL, GETEX, SETEX,
// PSETEX, TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST) runs on that instant
// as on a server whose clock read it. EVAL and EVALSHA bodies are rewritten
// by vclock.Rewrite (vclock.ExpiryTable), so a plain command and a script
// see the same TTLs. What is refused, and what still differs from a real
// server, is listed in docs/endpoint.md.
//
// The name says what it is to a user: the address REDIS_URL points at.
package endpoint

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/vclock"
)

// Config configures an endpoint.
type Config struct {
	// Redis is the trial's Redis, one node (not a Cluster): every command
	// of every client goes there, on a connection of its own per client
	// connection (dialled with Redis's options: address, user, password,
	// TLS, database). Required.
	Redis *redis.Client
	// Prefix names the endpoint's own keys (the virtual deadlines and the
	// set of keys the clients wrote), e.g. "ratelab:<run>:ep:". Required:
	// Start refuses an empty prefix.
	Prefix string
}

// Server is a running endpoint: its clients, the scripts they loaded and
// the keys they wrote. Safe for concurrent use.
type Server struct {
	cfg Config
	mu  sync.Mutex
	// clients and their listeners; closed once Close began
	clients []*Client
	closed  bool
	// clock knows the scripts the clients loaded and makes each
	// command's call of the deadline table form
	clock    *vclock.Table
	commands map[string]*redis.CommandInfo
	table    string // the deadline table's key
	written  string // the written-keys set's key
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// Client is one simulated client: a listener on 127.0.0.1 of its own, its
// virtual instant and its gate. A client process may open several
// connections to it; they all share the client's clock and gate. Safe for
// concurrent use.
type Client struct {
	srv  *Server
	ln   net.Listener
	addr string
	mu   sync.Mutex
	now  time.Time
	gate func(ctx context.Context, r *clientside.Round) error
	id   int
	// sessions are the open connections
	sessions map[*session]bool
}

// Start checks cfg, loads the endpoint's scripts into cfg.Redis and returns
// a Server with no clients yet. Errors name the Config field at fault, or
// wrap the error of the Redis call that failed. ctx bounds Start only.
func Start(ctx context.Context, cfg Config) (*Server, error) { return start(ctx, cfg) }

// NewClient opens a listener of its own on 127.0.0.1:0: one simulated
// client. Its clock reads the Unix epoch until SetNow. A client process may
// open several connections to it; they all share the client's clock and
// gate. Fails after Close.
func (s *Server) NewClient() (*Client, error) { return s.newClient() }

// Addr returns the client's listening address, "127.0.0.1:PORT".
func (c *Client) Addr() string { return c.addr }

// URL returns the client's address as a Redis URL, "redis://127.0.0.1:PORT/0"
// (database 0 is the trial's database, whichever it is on Redis).
func (c *Client) URL() string { return "redis://" + c.addr + "/0" }

// SetNow sets the virtual instant of every command of the client (TIME,
// key expiry, scripts) until the next SetNow; t is truncated to the µs.
// A command already sent to Redis keeps the instant it was sent with.
func (c *Client) SetNow(t time.Time) { c.setNow(t) }

// SetGate sets the client's gate; nil removes it. When set, each round trip
// of each of the client's connections (the commands read from one
// connection at once, i.e. a pipeline; MULTI..EXEC sent at once is one)
// waits for gate before it goes to Redis; the round's Commands are the
// client's commands as sent, its Replies are filled in after the round
// trip. The race family's scheduler (clientside.Interleave with a Policy)
// grants them one at a time. An error from gate is the reply to every
// command of the round (and the round is not sent).
func (c *Client) SetGate(gate func(ctx context.Context, r *clientside.Round) error) { c.setGate(gate) }

// Keys returns every key a client wrote through the endpoint (by a plain
// command or inside a script), whatever its name, sorted; nil after Close
// or when Redis cannot be read.
func (s *Server) Keys() []string { return s.keys() }

// Close stops every listener and connection, then deletes every key the
// clients wrote and the endpoint's own keys. The first error met is returned; a second Close returns nil.
func (s *Server) Close() error { return s.close() }
