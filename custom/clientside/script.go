// Package clientside runs a rate limiter's Lua script in ratelab instead of
// in Redis, the way application code runs a limiter: every redis.call and
// redis.pcall is its own round trip to the real Redis, on the simulated
// client's own connection, so that other clients' commands can come in
// between. It adds what application code does besides single commands:
// redis.pipeline({...}) (several commands in one round trip, not atomic),
// redis.transaction({...}) (MULTI/EXEC: atomic, nil when a WATCHed key
// changed) and WATCH/UNWATCH on the client's connection.
//
// The Lua is Lua 5.1, run by github.com/yuin/gopher-lua, in a sandbox as
// strict as Redis 7.0's: the libraries a Redis script has (base, table,
// string, math; no cjson, struct, cmsgpack, bit or coroutine), without
// what reads files, loads code or prints (dofile, loadfile, load,
// loadstring, require, module, print, getfenv, setfenv), and a missing
// global is an error as in Redis. A run (Exec.Run) is bounded: its ctx
// stops the Lua between instructions and inside pattern matching (Run
// returns a *StoppedError), no string longer than MaxString is built, and
// a watchdog on the Go heap stops every run under way when it passes its
// bound. Run's errors name the script once ("x.lua:3: ...").
//
// Replies reach the script converted as Redis converts them for scripts
// (RESP2): integers as numbers, bulk strings as strings,
// arrays as tables, a nil reply as false, a status reply as {ok=...} and an
// error as {err=...} (raised by redis.call, returned by redis.pcall). The
// script's own reply comes back converted the other way, as EVAL returns
// it: numbers truncated to integers, tables as arrays up to their first
// nil, {ok=...} as a status string, {err=...} as an error, false as nil,
// true as 1.
//
// Interleavings are decided by a Scheduler (Interleave): every round trip
// of every client waits for the scheduler's grant, so the order of all the
// clients' commands is the scheduler's, reproducible from its policy and
// seed. Key TTLs can run on a virtual clock (Expiry).
package clientside

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/ratelab/ratelab/usercmd"
	"github.com/ratelab/ratelab/vclock"
)

// Script is a compiled Lua script. It is immutable and safe for concurrent
// use: each run has a Lua state of its own (pooled).
type Script struct {
	name  string
	proto *lua.FunctionProto
	pool  sync.Pool
}

// Compile parses and compiles src, a script as EVAL takes it; name labels
// it in errors. Errors: a syntax error, with its line.
func Compile(name, src string) (*Script, error) {
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	proto, err := lua.Compile(rewriteConcat(chunk), name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Script{name: name, proto: proto}, nil
}

// Conn is one client's connection to Redis. *redis.Conn is one: its
// commands, pipelines and MULTI/EXEC all go on the same connection, so
// WATCH works.
type Conn interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// Round kinds.
const (
	KindCall        = "call"        // one command
	KindPipeline    = "pipeline"    // several commands in one round trip, not atomic
	KindTransaction = "transaction" // MULTI ... EXEC
)

// Round is one round trip of a client: its commands as the script sent them
// and, once answered, their replies rendered for people ("1", "\"abc\"",
// "nil", "[1 \"a\"]", "(error) ERR ...", "aborted" for an EXEC a WATCHed
// key aborted).
type Round struct {
	Client   int
	Kind     string
	Commands [][]string
	Replies  []string
	// Read: every command is a read (GET, ZCARD, ...). ReadBefore: the
	// client's decision under way already sent a read.
	Read, ReadBefore bool
}

// Exec runs scripts for one client on its connection. Not safe for
// concurrent use: one Exec per client.
type Exec struct {
	// Conn is the client's connection. Required.
	Conn Conn
	// Client numbers the client in Rounds.
	Client int
	// Gate, when set, is called before every round trip and must return
	// when the round may go (a Scheduler's grant); an error stops the
	// script with it. Nil: every round goes at once.
	Gate func(ctx context.Context, r *Round) error
	// Expiry, when set, runs key TTLs on the virtual clock Now (see
	// vclock.Deadlines); nil sends TTL commands to Redis as they are.
	Expiry *vclock.Deadlines
	// Table, when set, runs key TTLs and TIME on the virtual clock Now in
	// a deadline table in Redis instead (vclock.Table, the endpoint's
	// mechanism): every command, and the scripts the script EVALs, on one
	// clock. TableKey and WrittenKey name its hash and its written-keys
	// set (keys of the script's hash slot). Takes precedence over Expiry.
	Table                *vclock.Table
	TableKey, WrittenKey string
	// Now is the virtual time of the decision under way, for Expiry and
	// Table.
	Now int64 // µs since the Unix epoch
	// Rounds, when not nil, collects every round trip.
	Rounds *[]*Round

	failed error // the last round trip's failure, raised in the script

	readBefore bool
	watching   bool
	refused    error // a command the policy refused (usercmd), for Run
}

// Run runs s with KEYS keys and ARGV args and returns its reply converted as
// EVAL returns it (int64, string, []any, nil). The script's error, or one
// it raised with a Redis error, is returned as an error; so is a round trip
// that failed (a network error, a cancelled ctx). ctx also bounds the Lua
// itself: a script that loops forever stops when ctx is done. A WATCH left
// by the script is undone (UNWATCH) before Run returns. A command a user's
// code may not send (usercmd.Check: FUNCTION, AUTH, SCAN, ...) is never
// sent, on any Redis: Run returns an error wrapping its *usercmd.Refusal
// ("x.lua called FUNCTION LOAD: not allowed (...)"), also when the script
// caught the error (pcall) and went on.
func (e *Exec) Run(ctx context.Context, s *Script, keys, args []string) (any, error) {
	e.readBefore, e.failed = false, nil
	L, _ := s.pool.Get().(*lua.LState)
	if L == nil {
		L = newState()
	}
	start := time.Now()
	ctx, unwatch := watched(ctx) // the memory watchdog may stop it
	defer unwatch()
	L.SetContext(ctx) // a script that never returns stops with ctx
	L.SetGlobal("KEYS", stringsTable(L, keys))
	L.SetGlobal("ARGV", stringsTable(L, args))
	L.SetGlobal("redis", e.redisTable(ctx, L))
	L.SetGlobal(concatGlobal, L.NewFunction(concat))
	L.Push(L.NewFunctionFromProto(s.proto))
	err := L.PCall(0, 1, nil)
	L.RemoveContext()
	if err == nil {
		defer s.pool.Put(L)
	} else {
		defer L.Close() // a state an error unwound is not reused
	}
	if e.watching {
		e.watching = false
		_ = e.Conn.Do(ctx, "UNWATCH").Err() // its own connection: no other client sees it
	}
	if ref := e.refused; ref != nil {
		// whatever the script did after (a pcall catches the Lua error)
		e.refused = nil
		L.SetTop(0)
		return nil, fmt.Errorf("%s %w", s.name, ref)
	}
	if err != nil {
		L.SetTop(0)
		var ae *lua.ApiError
		if errors.As(err, &ae) {
			if t, ok := ae.Object.(*lua.LTable); ok {
				if msg, ok := t.RawGetString("err").(lua.LString); ok {
					return nil, fmt.Errorf("%s: %s", s.name, string(msg))
				}
			}
			msg := ae.Object.String()
			if ctx.Err() != nil && (e.failed == nil || !strings.HasSuffix(msg, e.failed.Error())) {
				// stopped while the Lua ran, not while Redis answered
				return nil, stopped(ctx, s.name, msg, time.Since(start))
			}
			return nil, errors.New(named(s.name, msg))
		}
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	ret := L.Get(-1)
	L.SetTop(0)
	return fromLua(ret)
}

// named is a Lua error message msg that names the script once: as it is
// when it starts with the script's position ("name:line: ..."), else
// after the name.
func named(name, msg string) string {
	if strings.HasPrefix(msg, name+":") {
		return msg
	}
	return name + ": " + msg
}

func stringsTable(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for _, s := range ss {
		t.Append(lua.LString(s))
	}
	return t
}

// redisTable is the script's redis library, bound to e and ctx.
func (e *Exec) redisTable(ctx context.Context, L *lua.LState) *lua.LTable {
	t := L.NewTable()
	call := func(protected bool) lua.LGFunction {
		return func(L *lua.LState) int {
			cmd, err := commandArgs(L, 1, L.GetTop())
			if err != nil {
				L.ArgError(1, err.Error())
			}
			replies, err := e.round(ctx, KindCall, [][]string{cmd})
			if err != nil {
				e.failed = err
				L.RaiseError("%s", err.Error())
			}
			v := toLua(L, replies[0])
			if rt, ok := v.(*lua.LTable); ok && !protected && rt.RawGetString("err") != lua.LNil {
				L.Error(rt, 0)
			}
			L.Push(v)
			return 1
		}
	}
	multi := func(kind string) lua.LGFunction {
		return func(L *lua.LState) int {
			list := L.CheckTable(1)
			var cmds [][]string
			var bad error
			list.ForEach(func(_, v lua.LValue) {
				c, ok := v.(*lua.LTable)
				if !ok {
					bad = fmt.Errorf("redis.%s: every element must be a table of a command and its arguments", kind)
					return
				}
				cmd, err := tableArgs(c)
				if err != nil && bad == nil {
					bad = err
				}
				cmds = append(cmds, cmd)
			})
			if bad != nil {
				L.ArgError(1, bad.Error())
			}
			replies, err := e.round(ctx, kind, cmds)
			if err != nil {
				e.failed = err
				L.RaiseError("%s", err.Error())
			}
			if replies == nil { // EXEC aborted
				L.Push(lua.LFalse)
				return 1
			}
			out := L.CreateTable(len(replies), 0)
			for _, r := range replies {
				out.Append(toLua(L, r))
			}
			L.Push(out)
			return 1
		}
	}
	reply := func(field string) lua.LGFunction {
		return func(L *lua.LState) int {
			r := L.NewTable()
			r.RawSetString(field, lua.LString(L.CheckString(1)))
			L.Push(r)
			return 1
		}
	}
	L.SetFuncs(t, map[string]lua.LGFunction{
		"call": call(false), "pcall": call(true),
		"pipeline": multi(KindPipeline), "transaction": multi(KindTransaction),
		"error_reply": reply("err"), "status_reply": reply("ok"),
		"log":                func(*lua.LState) int { return 0 },
		"setresp":            func(*lua.LState) int { return 0 },
		"set_repl":           func(*lua.LState) int { return 0 },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
	})
	for i, n := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"} {
		t.RawSetString(n, lua.LNumber(i))
	}
	return t
}

// commandArgs reads the arguments from..to of the stack as a command.
func commandArgs(L *lua.LState, from, to int) ([]string, error) {
	if to < from {
		return nil, errors.New("please specify at least one argument for this redis lib call")
	}
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		s, err := argString(L.Get(i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func tableArgs(t *lua.LTable) ([]string, error) {
	n := t.Len()
	if n == 0 {
		return nil, errors.New("please specify at least one argument for this redis lib call")
	}
	out := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		s, err := argString(t.RawGetInt(i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// argString is a command argument as Redis makes it from a Lua value:
// strings as they are, numbers in their shortest form.
func argString(v lua.LValue) (string, error) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), nil
	case lua.LNumber:
		return formatNumber(float64(x)), nil
	}
	return "", errors.New("lua redis lib command arguments must be strings or integers")
}

// formatNumber renders f as Redis renders a Lua number argument: the
// shortest form that reads back as f, without an exponent for whole numbers.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// statusReply is the text of a status reply, told apart from a bulk string
// (go-redis returns both as strings).
type statusReply string

// errorReply is a Redis error reply.
type errorReply string

// round sends cmds as one round trip of kind, after the gate, and returns
// their replies (nil for an aborted transaction). An error is a failed
// round trip, or a command the policy on a user's commands refuses
// (usercmd.Check: the round is not sent, and Run returns the refusal);
// Redis error replies are errorReply values.
func (e *Exec) round(ctx context.Context, kind string, cmds [][]string) ([]any, error) {
	for _, c := range cmds {
		if err := usercmd.Check(c); err != nil {
			e.refused = fmt.Errorf("called %w", err)
			return nil, e.refused
		}
	}
	r := &Round{Client: e.Client, Kind: kind, Commands: cmds, Read: allReads(cmds), ReadBefore: e.readBefore}
	if e.Gate != nil {
		if err := e.Gate(ctx, r); err != nil {
			return nil, err
		}
	}
	if r.Read || anyRead(cmds) {
		e.readBefore = true
	}
	if e.Rounds != nil {
		*e.Rounds = append(*e.Rounds, r)
	}
	replies, err := e.send(ctx, kind, cmds)
	if err != nil {
		r.Replies = []string{"(failed) " + err.Error()}
		return nil, err
	}
	if replies == nil {
		r.Replies = []string{"aborted"}
	} else {
		for _, v := range replies {
			r.Replies = append(r.Replies, Render(v))
		}
	}
	return replies, nil
}

// send is one round trip, with TTL commands translated when e.Expiry is set.
func (e *Exec) send(ctx context.Context, kind string, cmds [][]string) ([]any, error) {
	var tr []vclock.Translated
	wire := cmds
	// replyOf reads a status reply by the command the reply answers: the
	// script's own on the table (the runner answers as the command would),
	// the translated one with Expiry (Settle makes its reply the command's)
	asSent := wire
	if e.Table != nil {
		var err error
		if wire, err = e.tableWire(ctx, cmds); err != nil {
			return nil, err
		}
		asSent = cmds
	} else if e.Expiry != nil {
		var err error
		if wire, tr, err = e.expiryWire(ctx, cmds); err != nil {
			return nil, err
		}
		asSent = wire
	}
	for _, c := range wire {
		switch strings.ToUpper(c[0]) {
		case "WATCH":
			e.watching = true
		case "UNWATCH", "EXEC", "DISCARD":
			e.watching = false
		}
	}
	var replies []any
	switch kind {
	case KindCall:
		v, err := e.Conn.Do(ctx, toAny(wire[0])...).Result()
		rep, err := replyOf(asSent[0], v, err)
		if err != nil {
			return nil, err
		}
		replies = []any{rep}
	default:
		fn := func(p redis.Pipeliner) error {
			for _, c := range wire {
				p.Do(ctx, toAny(c)...)
			}
			return nil
		}
		var cmders []redis.Cmder
		var err error
		if kind == KindTransaction {
			e.watching = false // EXEC unwatches
			cmders, err = e.Conn.TxPipelined(ctx, fn)
			if errors.Is(err, redis.TxFailedErr) {
				return nil, nil
			}
		} else {
			cmders, err = e.Conn.Pipelined(ctx, fn)
		}
		if err != nil && len(cmders) != len(wire) {
			return nil, err
		}
		for i, c := range cmders {
			dc, _ := c.(*redis.Cmd)
			if dc == nil {
				return nil, fmt.Errorf("unexpected reply type %T", c)
			}
			v, cerr := dc.Result()
			rep, rerr := replyOf(asSent[i], v, cerr)
			if rerr != nil {
				return nil, rerr
			}
			replies = append(replies, rep)
		}
	}
	if e.Expiry != nil && e.Table == nil {
		e.expirySettle(tr, replies)
	}
	return replies, nil
}
