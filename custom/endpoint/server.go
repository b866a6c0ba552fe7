package endpoint

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
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

// runnerSource runs one plain command; rewritten with the deadline table,
// its dynamic call goes through the same translation as a script's calls.
// redis.pcall gives the command's own error reply back as it is.
const runnerSource = "return redis.pcall(unpack(ARGV))"

// script is a script a client loaded (EVAL or SCRIPT LOAD), as rewritten
// for the virtual clock and loaded in Redis.
type script struct {
	sha string // the rewritten script's SHA1
}

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
	s := &Server{cfg: cfg, scripts: map[string]*script{}, commands: cmds,
		table: cfg.Prefix + "deadlines", written: cfg.Prefix + "written"}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.runner, err = s.load(ctx, runnerSource); err != nil {
		s.cancel()
		return nil, err
	}
	return s, nil
}

// load rewrites src for the deadline table and loads it in Redis.
func (s *Server) load(ctx context.Context, src string) (*script, error) {
	rw, err := vclock.Rewrite(src, vclock.Options{Expiry: vclock.ExpiryTable})
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	sha, err := s.cfg.Redis.ScriptLoad(ctx, rw.Source).Result()
	if err != nil {
		return nil, fmt.Errorf("endpoint: loading a script in Redis: %w", err)
	}
	return &script{sha: sha}, nil
}

// register rewrites and loads src unless it is known, and returns the
// SHA1 the client knows it by.
func (s *Server) register(ctx context.Context, src string) (string, *script, error) {
	h := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(h[:])
	s.mu.Lock()
	sc := s.scripts[sha]
	s.mu.Unlock()
	if sc != nil {
		return sha, sc, nil
	}
	sc, err := s.load(ctx, src)
	if err != nil {
		return "", nil, err
	}
	s.mu.Lock()
	s.scripts[sha] = sc
	s.mu.Unlock()
	return sha, sc, nil
}

func (s *Server) script(sha string) *script {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scripts[strings.ToLower(sha)]
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
	s.mu.Lock()
	s.scripts = nil
	s.mu.Unlock()
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
