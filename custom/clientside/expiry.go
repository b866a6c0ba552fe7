package clientside

import (
	"strconv"
	"strings"
	"sync"
)

// Expiry keeps key TTLs on a virtual clock for client-side scripts: the
// TTL commands a script sends are not given to Redis (whose clock is the
// real one) but turned into deadlines kept here, and a key whose deadline
// has passed on the virtual clock is deleted before the next command that
// names it, as Redis expires keys lazily on access.
//
// Translated: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT),
// SETEX, PSETEX, SET with EX, PX, EXAT, PXAT or KEEPTTL, PERSIST, TTL,
// PTTL; TIME answers the virtual clock; DEL, UNLINK and a SET without a TTL drop a key's deadline. Their
// replies are the ones Redis gives. Other commands that change a key's TTL
// (GETEX, RENAME, RESTORE ... TTL) go to Redis as they are, on its clock.
//
// The zero Expiry is empty and ready. Safe for concurrent use; several
// clients share one.
type Expiry struct {
	mu       sync.Mutex
	deadline map[string]int64 // key -> virtual µs at which it expires
}

// translated is a command as sent (wire) and what settle must do with its
// reply.
type translated struct {
	wire []string
	op   string // "" (as is), "expire", "set", "persist", "ttl", "del"
	key  string
	at   int64 // the new deadline, µs (op "expire", "set"); 0: none
	keep bool  // SET KEEPTTL
	cond string
	unit int64 // TTL/PTTL: µs per unit of the reply
}

// due returns the keys cmds name whose deadline is at or before now, and
// forgets them.
func (x *Expiry) due(now int64, cmds [][]string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	for _, c := range cmds {
		for _, a := range c[1:] {
			if d, ok := x.deadline[a]; ok && d <= now {
				delete(x.deadline, a)
				out = append(out, a)
			}
		}
	}
	return out
}

// translate returns the command to send for c at virtual time now.
func (x *Expiry) translate(now int64, c []string) translated {
	name := strings.ToUpper(c[0])
	t := translated{wire: c}
	num := func(i int) (int64, bool) {
		if i >= len(c) {
			return 0, false
		}
		n, err := strconv.ParseInt(c[i], 10, 64)
		return n, err == nil
	}
	switch name {
	case "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT":
		n, ok := num(2)
		if !ok {
			return t // Redis answers the error
		}
		unit := int64(1e6)
		if name[0] == 'P' {
			unit = 1000
		}
		at := n * unit
		if !strings.HasSuffix(name, "AT") {
			at += now
		}
		t.op, t.key, t.at, t.wire = "expire", c[1], at, []string{"EXISTS", c[1]}
		if len(c) > 3 {
			t.cond = strings.ToUpper(c[3])
		}
	case "SETEX", "PSETEX":
		n, ok := num(2)
		if !ok || len(c) != 4 {
			return t
		}
		unit := int64(1e6)
		if name[0] == 'P' {
			unit = 1000
		}
		t.op, t.key, t.at, t.wire = "set", c[1], now+n*unit, []string{"SET", c[1], c[3]}
		if n <= 0 {
			return translated{wire: c}
		}
	case "SET":
		if len(c) < 3 {
			return t
		}
		t.op, t.key = "set", c[1]
		t.wire = []string{"SET", c[1], c[2]}
		for i := 3; i < len(c); i++ {
			o := strings.ToUpper(c[i])
			switch o {
			case "EX", "PX", "EXAT", "PXAT":
				n, ok := num(i + 1)
				if !ok {
					return translated{wire: c}
				}
				unit := int64(1e6)
				if o[0] == 'P' {
					unit = 1000
				}
				t.at = n * unit
				if len(o) == 2 {
					t.at += now
				}
				i++
			case "KEEPTTL":
				t.keep = true
			default:
				t.wire = append(t.wire, c[i])
			}
		}
	case "PERSIST":
		if len(c) == 2 {
			t.op, t.key, t.wire = "persist", c[1], []string{"EXISTS", c[1]}
		}
	case "TTL", "PTTL":
		if len(c) == 2 {
			t.op, t.key, t.wire, t.unit = "ttl", c[1], []string{"EXISTS", c[1]}, 1e6
			if name == "PTTL" {
				t.unit = 1000
			}
		}
	case "DEL", "UNLINK":
		t.op = "del"
	case "TIME":
		t.op = "time" // answered with the virtual clock
	}
	return t
}

// settle records what the reply of c (sent as t) did to deadlines, and
// returns the reply Redis would have given to c.
func (x *Expiry) settle(now int64, c []string, t translated, reply any) any {
	if _, bad := reply.(errorReply); bad {
		return reply
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.deadline == nil {
		x.deadline = map[string]int64{}
	}
	exists := reply == int64(1)
	switch t.op {
	case "expire":
		if !exists {
			return int64(0)
		}
		old, has := x.deadline[t.key]
		switch t.cond {
		case "NX":
			if has {
				return int64(0)
			}
		case "XX":
			if !has {
				return int64(0)
			}
		case "GT":
			if !has || t.at <= old {
				return int64(0)
			}
		case "LT":
			if has && t.at >= old {
				return int64(0)
			}
		}
		x.deadline[t.key] = t.at
		return int64(1)
	case "set":
		if reply == nil && !setWithGet(c) {
			return reply // NX or XX: not set
		}
		switch {
		case t.at > 0:
			x.deadline[t.key] = t.at
		case !t.keep:
			delete(x.deadline, t.key)
		}
	case "persist":
		_, has := x.deadline[t.key]
		delete(x.deadline, t.key)
		if exists && has {
			return int64(1)
		}
		return int64(0)
	case "ttl":
		d, has := x.deadline[t.key]
		switch {
		case !exists:
			return int64(-2)
		case !has:
			return int64(-1)
		}
		left := d - now
		return (left + t.unit/2) / t.unit
	case "time":
		return []any{strconv.FormatInt(now/1e6, 10), strconv.FormatInt(now%1e6, 10)}
	case "del":
		for _, k := range c[1:] {
			delete(x.deadline, k)
		}
	}
	return reply
}
