package endpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/ratelab/ratelab/custom/clientside"
	"github.com/ratelab/ratelab/usercmd"
)

// session is one connection of a client and its own connection to Redis.
type session struct {
	c     *Client
	up    *upstream
	name  string
	multi bool // between MULTI and EXEC or DISCARD
	// aborted: a command was refused inside MULTI, so EXEC discards
	aborted bool
}

func (c *Client) accept(conn redcon.Conn) bool {
	s := c.srv
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.wg.Add(1)
	s.mu.Unlock()
	up, err := s.dial(s.ctx)
	if err != nil {
		s.wg.Done()
		conn.WriteError("ERR ratelab endpoint: cannot reach the trial's Redis: " + err.Error())
		return false
	}
	se := &session{c: c, up: up}
	c.mu.Lock()
	c.sessions[se] = true
	c.mu.Unlock()
	conn.SetContext(se)
	return true
}

func (c *Client) closed(conn redcon.Conn, _ error) {
	se, ok := conn.Context().(*session)
	if !ok {
		return
	}
	c.mu.Lock()
	delete(c.sessions, se)
	c.mu.Unlock()
	se.up.Close()
	c.srv.wg.Done()
}

// item is one command of a round trip and how it is answered: locally
// (local), or by Redis (up, then post when set, else the reply as it is).
type item struct {
	args  []string
	local func(w redcon.Conn)
	up    []string
	post  func(raw []byte, w redcon.Conn)
	read  bool
	quit  bool
}

// handle answers one round trip: cmd and the commands read with it.
func (c *Client) handle(conn redcon.Conn, cmd redcon.Command) {
	se := conn.Context().(*session)
	batch := append([]redcon.Command{cmd}, conn.ReadPipeline()...)
	now, gate := c.state()
	items := make([]*item, len(batch))
	for i, b := range batch {
		args := make([]string, len(b.Args))
		for j, a := range b.Args {
			args[j] = string(a)
		}
		items[i] = se.plan(args, now)
	}
	var sent []*item
	for _, it := range items {
		if it.up != nil {
			sent = append(sent, it)
		}
	}
	var round *clientside.Round
	var failed error
	if len(sent) > 0 && gate != nil {
		round = &clientside.Round{Client: c.id, Kind: clientside.KindCall, Read: true}
		for _, it := range sent {
			round.Commands = append(round.Commands, it.args)
			round.Read = round.Read && it.read
			if strings.EqualFold(it.args[0], "MULTI") {
				round.Kind = clientside.KindTransaction
			}
		}
		if len(sent) > 1 && round.Kind == clientside.KindCall {
			round.Kind = clientside.KindPipeline
		}
		if err := gate(c.srv.ctx, round); err != nil {
			failed = fmt.Errorf("ratelab endpoint: the scheduler: %w", err)
		}
	}
	replies := map[*item][]byte{}
	if failed == nil && len(sent) > 0 {
		var wire []byte
		for _, it := range sent {
			wire = append(wire, encode(it.up)...)
		}
		if _, err := se.up.Write(wire); err != nil {
			failed = fmt.Errorf("ratelab endpoint: the trial's Redis: %w", err)
		}
		for _, it := range sent {
			if failed != nil {
				break
			}
			raw, err := se.up.reply()
			if err != nil {
				failed = fmt.Errorf("ratelab endpoint: the trial's Redis: %w", err)
				break
			}
			replies[it] = raw
			if round != nil {
				round.Replies = append(round.Replies, render(raw))
			}
		}
	}
	for _, it := range items {
		switch {
		case it.local != nil:
			it.local(conn)
		case failed != nil:
			conn.WriteError("ERR " + failed.Error())
		case it.post != nil:
			it.post(replies[it], conn)
		default:
			conn.WriteRaw(replies[it])
		}
		if it.quit {
			conn.Close()
			return
		}
	}
	if failed != nil {
		conn.Close() // the connection to Redis is out of step
	}
}

// render shows a reply for a Round: the text of a simple reply, the raw
// form of an array.
func render(raw []byte) string {
	_, r := redcon.ReadNextRESP(raw)
	switch r.Type {
	case redcon.Bulk:
		if r.Data == nil {
			return "(nil)"
		}
		return string(r.Data)
	case redcon.Array:
		return strings.TrimSpace(string(raw))
	case redcon.Error:
		return "(error) " + string(r.Data)
	}
	return string(r.Data)
}

// refuse answers an error naming the command; inside MULTI it also makes
// EXEC discard the transaction, as Redis does for a command it refuses
// while queueing.
func (se *session) refuse(it *item, msg string) *item {
	if se.multi {
		se.aborted = true
	}
	it.local = func(w redcon.Conn) { w.WriteError(msg) }
	return it
}

func ok(w redcon.Conn) { w.WriteString("OK") }

// Commands that cannot be put on the virtual clock, by lower-case name
// (or "name|subcommand"), with why.
var unclocked = map[string]string{
	"blpop": "it blocks on the real clock", "brpop": "it blocks on the real clock",
	"blmove": "it blocks on the real clock", "brpoplpush": "it blocks on the real clock",
	"blmpop": "it blocks on the real clock", "bzpopmin": "it blocks on the real clock",
	"bzpopmax": "it blocks on the real clock", "bzmpop": "it blocks on the real clock",
	"wait": "it waits for replicas on the real clock", "waitaof": "it waits on the real clock",
	"fcall": "Functions do not run on the virtual clock", "fcall_ro": "Functions do not run on the virtual clock",
	"object|freq": "access frequency counts on the real clock", "object|idletime": "idle time counts on the real clock",
	"dbsize": "it counts keys that expired on the virtual clock", "unsubscribe": "Pub/Sub is not served",
	"punsubscribe": "Pub/Sub is not served", "sunsubscribe": "Pub/Sub is not served",
	"xread": "a stream read may block on the real clock", "xreadgroup": "a stream read may block on the real clock",
	"memory": "it reads memory, which includes keys expired on the virtual clock",
	"info":   "it reports server-wide figures (keys, memory) that include keys expired on the virtual clock",
}

// plan decides how args (name first) is answered at virtual time now.
func (se *session) plan(args []string, now time.Time) *item {
	it := &item{args: args}
	name := strings.ToLower(args[0])
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(args[1])
	}
	refuse := func(what, why string) *item {
		return se.refuse(it, "ERR ratelab endpoint: "+what+" is refused: "+why)
	}
	switch name {
	case "quit":
		it.local, it.quit = ok, true
		return it
	case "hello":
		return se.hello(it)
	case "select":
		if len(args) == 2 && args[1] == "0" {
			it.local = ok
			return it
		}
		return refuse(strings.Join(args, " "), "the endpoint serves database 0 only (the trial's database)")
	case "auth":
		it.local = func(w redcon.Conn) {
			w.WriteError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		}
		return it
	case "client":
		return se.client(it, sub)
	case "script":
		return se.scriptCmd(it, sub)
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		return se.eval(it, name, now)
	case "multi":
		se.multi, se.aborted = true, false
		it.up = args
		return it
	case "exec", "discard":
		if se.aborted && name == "exec" {
			it.up = []string{"DISCARD"}
			it.post = func(_ []byte, w redcon.Conn) {
				w.WriteError("EXECABORT Transaction discarded because of previous errors.")
			}
		} else {
			it.up = args
		}
		se.multi, se.aborted = false, false
		return it
	case "watch", "unwatch":
		it.up, it.read = args, true
		return it
	}
	if why, ok := unclocked[name]; ok {
		if (name != "xread" && name != "xreadgroup") || hasArg(args, "block") {
			return refuse(strings.ToUpper(name), why)
		}
	}
	if why, ok := unclocked[name+"|"+sub]; ok {
		return refuse(strings.ToUpper(name+" "+sub), why)
	}
	if err := usercmd.Check(args); err != nil {
		return se.refuse(it, "ERR ratelab endpoint: "+err.Error())
	}
	info := se.c.srv.commands[name]
	if info == nil {
		return se.refuse(it, fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", args[0], quoteArgs(args[1:])))
	}
	if a := int(info.Arity); (a > 0 && len(args) != a) || (a < 0 && len(args) < -a) {
		return se.refuse(it, fmt.Sprintf("ERR wrong number of arguments for '%s' command", name))
	}
	for _, f := range info.Flags {
		if f == "noscript" || f == "blocking" || f == "pubsub" {
			return refuse(strings.ToUpper(name), "it cannot be put on the virtual clock (Redis flags it "+f+")")
		}
	}
	it.read = info.ReadOnly
	return se.send(it, args, now)
}

// send makes it go to Redis as the call of the table form that runs cmd.
func (se *session) send(it *item, cmd []string, now time.Time) *item {
	up, err := se.c.srv.wire(se.c.srv.ctx, cmd, now)
	if err != nil {
		return se.refuse(it, "ERR "+err.Error())
	}
	it.up = up
	return it
}

func hasArg(args []string, a string) bool {
	for _, x := range args[1:] {
		if strings.EqualFold(x, a) {
			return true
		}
	}
	return false
}

// quoteArgs renders arguments as Redis does in "unknown command" errors.
func quoteArgs(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString("'" + a + "' ")
	}
	return b.String()
}

// hello answers HELLO as a RESP2-only server: HELLO 3 is refused with
// NOPROTO (go-redis and redis-py then stay on RESP2), HELLO or HELLO 2
// with the server's description.
func (se *session) hello(it *item) *item {
	args := it.args
	if len(args) > 1 && args[1] != "2" {
		it.local = func(w redcon.Conn) { w.WriteError("NOPROTO unsupported protocol version") }
		return it
	}
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "setname":
			if i+1 < len(args) {
				se.name = args[i+1]
				i++
			}
		case "auth":
			return se.refuse(it, "ERR ratelab endpoint: HELLO AUTH is refused: the endpoint has no users")
		}
	}
	it.local = func(w redcon.Conn) {
		w.WriteArray(14)
		for _, kv := range [][2]string{{"server", "redis"}, {"version", "7.0.0"}} {
			w.WriteBulkString(kv[0])
			w.WriteBulkString(kv[1])
		}
		w.WriteBulkString("proto")
		w.WriteInt(2)
		w.WriteBulkString("id")
		w.WriteInt(se.c.id + 1)
		for _, kv := range [][2]string{{"mode", "standalone"}, {"role", "master"}} {
			w.WriteBulkString(kv[0])
			w.WriteBulkString(kv[1])
		}
		w.WriteBulkString("modules")
		w.WriteArray(0)
	}
	return it
}

// client answers the CLIENT subcommands a client library sends on
// connecting; the others are refused.
func (se *session) client(it *item, sub string) *item {
	args := it.args
	switch sub {
	case "setname":
		if len(args) == 3 {
			se.name = args[2]
			it.local = ok
			return it
		}
	case "getname":
		name := se.name
		it.local = func(w redcon.Conn) {
			if name == "" {
				w.WriteNull()
			} else {
				w.WriteBulkString(name)
			}
		}
		return it
	case "setinfo":
		it.local = ok
		return it
	case "id":
		it.local = func(w redcon.Conn) { w.WriteInt(se.c.id + 1) }
		return it
	}
	return se.refuse(it, "ERR ratelab endpoint: CLIENT "+strings.ToUpper(sub)+" is refused: the endpoint answers CLIENT SETNAME, GETNAME, SETINFO and ID only")
}

// scriptCmd answers SCRIPT LOAD and EXISTS from the endpoint's scripts
// (the SHA1 a client knows is its script's, not the rewritten one's).
func (se *session) scriptCmd(it *item, sub string) *item {
	args := it.args
	srv := se.c.srv
	switch {
	case sub == "load" && len(args) == 3:
		sha, err := srv.register(srv.ctx, args[2])
		if err != nil {
			return se.refuse(it, "ERR "+err.Error())
		}
		it.local = func(w redcon.Conn) { w.WriteBulkString(sha) }
		return it
	case sub == "exists" && len(args) > 2:
		have := make([]bool, len(args)-2)
		for i, sha := range args[2:] {
			have[i] = srv.clock.Known(sha)
		}
		it.local = func(w redcon.Conn) {
			w.WriteArray(len(have))
			for _, h := range have {
				if h {
					w.WriteInt(1)
				} else {
					w.WriteInt(0)
				}
			}
		}
		return it
	}
	return se.refuse(it, "ERR ratelab endpoint: SCRIPT "+strings.ToUpper(sub)+" is refused: the endpoint answers SCRIPT LOAD and SCRIPT EXISTS only")
}

// eval sends EVAL or EVALSHA as the EVALSHA of the rewritten script, with
// the deadline table, the written-keys set and the virtual time appended
// (vclock.Table.Wire); EVALSHA of a script never loaded is answered
// NOSCRIPT.
func (se *session) eval(it *item, name string, now time.Time) *item {
	args := it.args
	srv := se.c.srv
	if len(args) < 3 {
		return se.refuse(it, fmt.Sprintf("ERR wrong number of arguments for '%s' command", name))
	}
	nk, err := strconv.Atoi(args[2])
	switch {
	case err != nil:
		return se.refuse(it, "ERR value is not an integer or out of range")
	case nk < 0:
		return se.refuse(it, "ERR Number of keys can't be negative")
	case nk > len(args)-3:
		return se.refuse(it, "ERR Number of keys can't be greater than number of args")
	}
	if strings.HasPrefix(name, "evalsha") {
		if !srv.clock.Known(args[1]) {
			it.local = func(w redcon.Conn) { w.WriteError("NOSCRIPT No matching script. Please use EVAL.") }
			return it
		}
	} else if _, err := srv.register(srv.ctx, args[1]); err != nil {
		return se.refuse(it, "ERR "+err.Error())
	}
	return se.send(it, args, now)
}
