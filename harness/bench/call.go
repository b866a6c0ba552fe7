package bench

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
)

// Call is the EVALSHA an algorithm makes for one decision, as its
// Scripted.Call describes it (cost 1, Redis TIME), with the arguments that
// change from call to call (a per-request nonce) marked. bench and
// redis-benchmark replay it on their own keys.
type Call struct {
	// Script is the algorithm's script; SHA its hash (EVALSHA's first argument).
	Script *redis.Script
	SHA    string
	// Args follow the one key: ARGV as strings, formatted as go-redis
	// sends them.
	Args []string
	// Nonce lists the indexes of Args that differ between two calls.
	Nonce []int
	// decode reads a reply (the limiter's Scripted.Decode); nil in a Call
	// not made by CallOf.
	decode func(reply any) (algorithms.Decision, error)
}

// CallOf asks lim for its script call twice (cost 1, Redis TIME) and
// returns it with its nonce positions. The key it is given must come back
// unchanged as the only KEYS entry (hash-tagged keys do), and both calls
// must use the same script with as many arguments, and no template of a
// script may read the clock (it would be replayed frozen). A limiter that is not
// algorithms.Scripted is refused with a field error naming "algorithms".
// CallOf makes no Redis call.
func CallOf(lim algorithms.Limiter) (Call, error) {
	const probe = "{probe}"
	s, ok := lim.(algorithms.Scripted)
	if !ok {
		return Call{}, notScripted(lim.Name())
	}
	if ck, ok := lim.(interface{ ClockTemplates() []string }); ok && len(ck.ClockTemplates()) > 0 {
		return Call{}, fmt.Errorf("%s: its template %q reads the clock, and bench replays one call with fixed arguments: bench a script that reads Redis TIME itself", lim.Name(), ck.ClockTemplates()[0])
	}
	var calls [2]algorithms.ScriptCall
	for i := range calls {
		c, err := s.Call(probe, 1, algorithms.RedisTime())
		if err != nil {
			return Call{}, err
		}
		calls[i] = c
	}
	a, b := calls[0], calls[1]
	if len(a.Keys) != 1 || a.Keys[0] != probe || a.Script == nil || b.Script == nil ||
		a.Script.Hash() != b.Script.Hash() || len(a.Args) != len(b.Args) {
		return Call{}, fmt.Errorf("%s: its script call (keys %v) cannot be replayed with other keys", lim.Name(), a.Keys)
	}
	call := Call{Script: a.Script, SHA: a.Script.Hash(),
		decode: func(reply any) (algorithms.Decision, error) { return s.Decode(a, reply) }}
	for i := range a.Args {
		x, y := argString(a.Args[i]), argString(b.Args[i])
		call.Args = append(call.Args, x)
		if x != y {
			call.Nonce = append(call.Nonce, i)
		}
	}
	return call, nil
}

// argString is an argument as go-redis writes it on the wire.
func argString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	default:
		return fmt.Sprint(v)
	}
}

// isNonce reports whether argument i changes from call to call.
func (c Call) isNonce(i int) bool { return slices.Contains(c.Nonce, i) }
