package clientside

// Replies between go-redis and the Lua VM, converted as Redis converts
// them for scripts, and their rendering in an interleaving.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	lua "github.com/yuin/gopher-lua"
)

// replyOf sorts a go-redis result into a reply: Redis errors become
// errorReply, redis.Nil nil, a status command's string a statusReply;
// other errors (network, context) are returned.
func replyOf(cmd []string, v any, err error) (any, error) {
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		var re redis.Error
		if errors.As(err, &re) {
			return errorReply(re.Error()), nil
		}
		return nil, err
	}
	if s, ok := v.(string); ok && statusCommands[strings.ToUpper(cmd[0])] && !setWithGet(cmd) {
		return statusReply(s), nil
	}
	return v, nil
}

func setWithGet(cmd []string) bool {
	if !strings.EqualFold(cmd[0], "SET") {
		return false
	}
	for _, a := range cmd[3:] {
		if strings.EqualFold(a, "GET") {
			return true
		}
	}
	return false
}

// statusCommands answer with a status reply ("OK", "QUEUED", a type name).
var statusCommands = map[string]bool{
	"SET": true, "SETEX": true, "PSETEX": true, "MSET": true, "HMSET": true, "RENAME": true,
	"TYPE": true, "PING": true, "WATCH": true, "UNWATCH": true, "MULTI": true, "DISCARD": true,
	"LSET": true, "LTRIM": true, "FLUSHDB": true, "FLUSHALL": true, "SELECT": true, "RESTORE": true,
	"PFMERGE": true, "XGROUP": true,
}

func toAny(c []string) []any {
	out := make([]any, len(c))
	for i, s := range c {
		out[i] = s
	}
	return out
}

// toLua converts a reply for the script, as Redis does (RESP2).
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LFalse
	case int64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case statusReply:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(string(x)))
		return t
	case errorReply:
		t := L.NewTable()
		t.RawSetString("err", lua.LString(string(x)))
		return t
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.RawSetInt(i+1, toLua(L, e))
		}
		return t
	case float64: // RESP3 double, should the connection speak it
		return lua.LString(formatNumber(x))
	case bool:
		if x {
			return lua.LNumber(1)
		}
		return lua.LFalse
	case map[any]any: // RESP3 map: flattened as RESP2 sends it
		t := L.NewTable()
		for k, e := range x {
			t.Append(toLua(L, k))
			t.Append(toLua(L, e))
		}
		return t
	}
	return lua.LString(fmt.Sprint(v))
}

// fromLua converts the script's reply as EVAL returns it.
func fromLua(v lua.LValue) (any, error) {
	switch x := v.(type) {
	case lua.LNumber:
		return int64(x), nil
	case lua.LString:
		return string(x), nil
	case lua.LBool:
		if x {
			return int64(1), nil
		}
		return nil, nil
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			return nil, errors.New(string(e))
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return string(s), nil
		}
		var out []any
		for i := 1; ; i++ {
			e := x.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			c, err := fromLua(e)
			if err != nil {
				c = err.Error() // an error inside an array: its text, as a reply element
			}
			out = append(out, c)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	}
	return nil, nil
}

// Render shows a reply for people: 1, "abc", nil, [1 "a"], (error) ERR ...
func Render(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return strconv.Quote(x)
	case statusReply:
		return string(x)
	case errorReply:
		return "(error) " + string(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Render(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(v)
}

// readCommands are the commands that only read.
var readCommands = map[string]bool{
	"GET": true, "MGET": true, "EXISTS": true, "TTL": true, "PTTL": true, "TYPE": true, "STRLEN": true, "GETRANGE": true,
	"ZCARD": true, "ZCOUNT": true, "ZRANGE": true, "ZRANGEBYSCORE": true, "ZREVRANGE": true, "ZREVRANGEBYSCORE": true,
	"ZSCORE": true, "ZRANK": true, "ZREVRANK": true, "ZMSCORE": true, "ZLEXCOUNT": true,
	"HGET": true, "HMGET": true, "HGETALL": true, "HLEN": true, "HEXISTS": true, "HKEYS": true, "HVALS": true,
	"LLEN": true, "LRANGE": true, "LINDEX": true, "SCARD": true, "SMEMBERS": true, "SISMEMBER": true,
	"TIME": true, "PFCOUNT": true, "XLEN": true, "XRANGE": true,
	"WATCH": true, // reads in the sense that matters: it observes the key before the decision
}

func allReads(cmds [][]string) bool {
	for _, c := range cmds {
		if !readCommands[strings.ToUpper(c[0])] {
			return false
		}
	}
	return len(cmds) > 0
}

func anyRead(cmds [][]string) bool {
	for _, c := range cmds {
		if readCommands[strings.ToUpper(c[0])] {
			return true
		}
	}
	return false
}
