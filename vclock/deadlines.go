package vclock

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Deadlines keeps key TTLs on a virtual clock for a client that sends
// commands one by one (a client-side script): the TTL commands it sends
// are not given to Redis, whose clock is the real one, but turned into
// deadlines kept here, and a key whose deadline has passed on the virtual
// clock is to be deleted before the next command that names it (Due), as
// Redis expires keys lazily on access.
//
// A round trip goes Due (delete the keys it returns), Translate each
// command and send its Wire, then Settle each reply. Translated: EXPIRE,
// PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT), SETEX, PSETEX, SET
// with EX, PX, EXAT, PXAT or KEEPTTL, PERSIST, TTL, PTTL; TIME answers the
// virtual clock; DEL, UNLINK and a SET without a TTL drop a key's
// deadline. Settle gives the replies Redis would give. Other commands that
// change a key's TTL (GETEX, RENAME, RESTORE ... TTL) go to Redis as they
// are, on its clock.
//
// Deadlines are kept to the µs; the virtual time passed to each method is
// truncated to the µs. The zero Deadlines is empty and ready. Safe for
// concurrent use: several clients may share one.
type Deadlines struct {
	mu sync.Mutex
	at map[string]int64 // key -> virtual µs since the Unix epoch at which it expires
}

// Translated is one command as Translate made it: Wire is what to send in
// its place (the command itself when it is not translated), the rest what
// Settle needs to turn Redis's reply to Wire into the reply to the
// command.
type Translated struct {
	// Wire is the command to send, name first.
	Wire []string
	cmd  []string // the command as the client sent it
	op   string   // "" (as is), "expire", "set", "persist", "ttl", "del", "time"
	key  string
	at   int64 // the new deadline, µs (op "expire", "set"); 0: none
	keep bool  // SET KEEPTTL
	get  bool  // SET ... GET
	cond string
	unit int64 // TTL/PTTL: µs per unit of the reply
}

// Due returns the keys that cmds (each name first) name whose deadline is
// at or before now, and forgets their deadlines: the caller deletes them
// from Redis before sending cmds. Nil when there are none.
func (d *Deadlines) Due(now time.Time, cmds [][]string) []string {
	us := now.UnixMicro()
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, c := range cmds {
		for _, a := range c[1:] {
			if at, ok := d.at[a]; ok && at <= us {
				delete(d.at, a)
				out = append(out, a)
			}
		}
	}
	return out
}

// Translate returns the command to send for c (name first, at least the
// name) at virtual time now. A command whose arguments Redis would refuse
// is sent as it is, for Redis to answer the error. It does not change the
// table: Settle does, with the reply.
func (d *Deadlines) Translate(now time.Time, c []string) Translated {
	us := now.UnixMicro()
	name := strings.ToUpper(c[0])
	t := Translated{Wire: c, cmd: c}
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
			at += us
		}
		t.op, t.key, t.at, t.Wire = "expire", c[1], at, []string{"EXISTS", c[1]}
		if len(c) > 3 {
			t.cond = strings.ToUpper(c[3])
		}
	case "SETEX", "PSETEX":
		n, ok := num(2)
		if !ok || len(c) != 4 || n <= 0 {
			return t
		}
		unit := int64(1e6)
		if name[0] == 'P' {
			unit = 1000
		}
		t.op, t.key, t.at, t.Wire = "set", c[1], us+n*unit, []string{"SET", c[1], c[3]}
	case "SET":
		if len(c) < 3 {
			return t
		}
		t.op, t.key = "set", c[1]
		t.Wire = []string{"SET", c[1], c[2]}
		for i := 3; i < len(c); i++ {
			o := strings.ToUpper(c[i])
			switch o {
			case "EX", "PX", "EXAT", "PXAT":
				n, ok := num(i + 1)
				if !ok {
					return Translated{Wire: c, cmd: c}
				}
				unit := int64(1e6)
				if o[0] == 'P' {
					unit = 1000
				}
				t.at = n * unit
				if len(o) == 2 {
					t.at += us
				}
				i++
			case "KEEPTTL":
				t.keep = true
			default:
				t.get = t.get || o == "GET"
				t.Wire = append(t.Wire, c[i])
			}
		}
	case "PERSIST":
		if len(c) == 2 {
			t.op, t.key, t.Wire = "persist", c[1], []string{"EXISTS", c[1]}
		}
	case "TTL", "PTTL":
		if len(c) == 2 {
			t.op, t.key, t.Wire, t.unit = "ttl", c[1], []string{"EXISTS", c[1]}, 1e6
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

// Settle records what reply, Redis's reply to t.Wire at virtual time now,
// did to the deadlines, and returns the reply Redis would have given to
// the command t was made of: an integer reply is an int64, TIME's reply
// two strings ([]any{seconds, microseconds}), any other reply is returned
// as given (nil for a nil reply). The caller does not settle an error
// reply (it is the command's reply as it is, and changes nothing).
func (d *Deadlines) Settle(now time.Time, t Translated, reply any) any {
	us := now.UnixMicro()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[string]int64{}
	}
	exists := reply == int64(1)
	switch t.op {
	case "expire":
		if !exists {
			return int64(0)
		}
		old, has := d.at[t.key]
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
		d.at[t.key] = t.at
		return int64(1)
	case "set":
		if reply == nil && !t.get {
			return reply // NX or XX: not set
		}
		switch {
		case t.at > 0:
			d.at[t.key] = t.at
		case !t.keep:
			delete(d.at, t.key)
		}
	case "persist":
		_, has := d.at[t.key]
		delete(d.at, t.key)
		if exists && has {
			return int64(1)
		}
		return int64(0)
	case "ttl":
		at, has := d.at[t.key]
		switch {
		case !exists:
			return int64(-2)
		case !has:
			return int64(-1)
		}
		left := at - us
		return (left + t.unit/2) / t.unit
	case "time":
		return []any{strconv.FormatInt(us/1e6, 10), strconv.FormatInt(us%1e6, 10)}
	case "del":
		for _, k := range t.cmd[1:] {
			delete(d.at, k)
		}
	}
	return reply
}
