package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/vclock"
)

func start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Redis == nil {
		return nil, errors.New("endpoint: Redis: required")
	}
	if cfg.Prefix == "" {
		return nil, errors.New("endpoint: Prefix: required (the endpoint's own keys live under it)")
	}
	cmds, err := cfg.Redis.Command(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("endpoint: reading Redis's command table (COMMAND): %w", err)
	}
	s := &Server{cfg: cfg, clock: vclock.NewTable(), commands: cmds,
		table: cfg.Prefix + "deadlines", written: cfg.Prefix + "written"}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// the plain-command runner, loaded now
	if _, err := s.wire(ctx, []string{"PING"}, time.Unix(0, 0)); err != nil {
		s.cancel()
		return nil, err
	}
	return s, nil
}

// wire returns the command to send for cmd at now (vclock.Table.Wire),
// after loading in Redis the rewritten script it needs.
func (s *Server) wire(ctx context.Context, cmd []string, now time.Time) ([]string, error) {
	w, load := s.clock.Wire(now, s.table, s.written, cmd)
	for _, src := range load {
		if err := s.cfg.Redis.ScriptLoad(ctx, src).Err(); err != nil {
			return nil, fmt.Errorf("endpoint: loading a script in Redis: %w", err)
		}
		s.clock.Loaded(src)
	}
	return w, nil
}

// register makes src known (vclock.Table.Register) and loads its rewrite,
// and returns the SHA1 the client knows it by.
func (s *Server) register(ctx context.Context, src string) (string, error) {
	sha, rw, err := s.clock.Register(src)
	if err != nil {
		return "", fmt.Errorf("endpoint: %w", err)
	}
	if err := s.cfg.Redis.ScriptLoad(ctx, rw).Err(); err != nil {
		return "", fmt.Errorf("endpoint: loading a script in Redis: %w", err)
	}
	s.clock.Loaded(rw)
	return sha, nil
}

func (s *Server) newClient() (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("endpoint: NewClient after Close")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("endpoint: listening on 127.0.0.1: %w", err)
	}
	c := &Client{srv: s, ln: ln, addr: ln.Addr().String(), id: len(s.clients), sessions: map[*session]bool{},
		now: time.Unix(0, 0)}
	s.clients = append(s.clients, c)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = redcon.Serve(ln, c.handle, c.accept, c.closed)
	}()
	return c, nil
}

func (c *Client) setNow(t time.Time) {
	c.mu.Lock()
	c.now = t.Truncate(time.Microsecond)
	c.mu.Unlock()
}

func (c *Client) setGate(gate func(ctx context.Context, r *clientside.Round) error) {
	c.mu.Lock()
	c.gate = gate
	c.mu.Unlock()
}

func (c *Client) state() (time.Time, func(ctx context.Context, r *clientside.Round) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now, c.gate
}

func (s *Server) keys() []string {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil
	}
	ks, err := s.cfg.Redis.SMembers(context.Background(), s.written).Result()
	if err != nil {
		return nil
	}
	slices.Sort(ks)
	return ks
}

func (s *Server) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	clients := s.clients
	s.mu.Unlock()
	s.cancel()
	var first error
	for _, c := range clients {
		if err := c.ln.Close(); err != nil && first == nil {
			first = err
		}
		c.mu.Lock()
		for se := range c.sessions {
			se.up.Close()
		}
		c.mu.Unlock()
	}
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.deleteKeys(ctx); err != nil && first == nil {
		first = err
	}
	return first
}

// deleteKeys deletes the written keys, in batches, then the endpoint's own.
func (s *Server) deleteKeys(ctx context.Context) error {
	rdb := s.cfg.Redis
	var cursor uint64
	for {
		ks, next, err := rdb.SScan(ctx, s.written, cursor, "", 500).Result()
		if err != nil {
			return fmt.Errorf("endpoint: reading the written keys: %w", err)
		}
		if len(ks) > 0 {
			if err := rdb.Unlink(ctx, ks...).Err(); err != nil {
				return fmt.Errorf("endpoint: deleting the written keys: %w", err)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if err := rdb.Unlink(ctx, s.written, s.table).Err(); err != nil {
		return fmt.Errorf("endpoint: deleting the endpoint's keys: %w", err)
	}
	return nil
}

// upstream is the connection to Redis that stands for one client
// connection: replies are forwarded as the bytes Redis sent.
type upstream struct {
	net.Conn
	buf []byte // read, not yet returned
}

// dial opens a connection to the trial's Redis with its options, logged
// in and on its database.
func (s *Server) dial(ctx context.Context) (*upstream, error) {
	o := s.cfg.Redis.Options()
	nc, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return nil, err
	}
	u := &upstream{Conn: nc}
	var hs [][]string
	if o.Password != "" {
		if o.Username != "" {
			hs = append(hs, []string{"AUTH", o.Username, o.Password})
		} else {
			hs = append(hs, []string{"AUTH", o.Password})
		}
	}
	if o.DB != 0 {
		hs = append(hs, []string{"SELECT", strconv.Itoa(o.DB)})
	}
	for _, h := range hs {
		if _, err := u.Write(encode(h)); err != nil {
			nc.Close()
			return nil, err
		}
		raw, err := u.reply()
		if err != nil {
			nc.Close()
			return nil, err
		}
		if raw[0] == '-' {
			nc.Close()
			return nil, fmt.Errorf("%s: %s", h[0], strings.TrimSpace(string(raw[1:])))
		}
	}
	return u, nil
}

// reply returns the next whole reply, as sent.
func (u *upstream) reply() ([]byte, error) {
	tmp := make([]byte, 16<<10)
	for {
		if n, _ := redcon.ReadNextRESP(u.buf); n > 0 {
			raw := slices.Clone(u.buf[:n])
			u.buf = u.buf[n:]
			return raw, nil
		}
		m, err := u.Read(tmp)
		u.buf = append(u.buf, tmp[:m]...)
		if err != nil && m == 0 {
			return nil, err
		}
	}
}

func encode(args []string) []byte {
	b := redcon.AppendArray(nil, len(args))
	for _, a := range args {
		b = redcon.AppendBulkString(b, a)
	}
	return b
}
