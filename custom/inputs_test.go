package custom

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
)

// redisErr is an error reply of Redis, as go-redis returns it.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

func TestExplain(t *testing.T) {
	const blog = "local limit = tonumber(ARGV[1])\nlocal window_ms = tonumber(ARGV[2])\nlocal n = redis.call('INCR', KEYS[1])\nreturn n <= limit and 1 or 0\n"
	failed := redisErr("ERR Lua redis lib command arguments must be strings or integers")
	shape := &ScriptError{fmt.Errorf("%w: got the string \"ok\"", ErrReplyShape)}
	cases := []struct {
		name       string
		src        string
		keys, args []string
		err        error
		field      string // "": err unchanged
		missing    string // Need, when field is set
	}{
		// no --arg at all: both reads are missing, named with their lines
		{"no args", blog, nil, nil, failed, "args", "s.lua reads ARGV[1] (line 1) and ARGV[2] (line 2), which no argument template fills"},
		// one given: the second is missing
		{"one arg", blog, nil, []string{"{limit}"}, failed, "args", "s.lua reads ARGV[2] (line 2), which the 1 argument template given does not reach"},
		// a second key the script reads and was not given
		{"a key short", "return redis.call('GET', KEYS[2])\n", nil, nil, failed, "keys", "s.lua reads KEYS[2] (line 1), which the 1 key template given does not reach"},
		// every read filled: a Redis error is the script's own
		{"all given", blog, nil, []string{"{limit}", "{window_ms}"}, failed, "", ""},
		// every read filled and a reply the predicate cannot judge: --allowed
		{"reply shape", "return 'ok'\n", nil, nil, shape, "allowed", "s.lua: its reply cannot be judged"},
		// not the script's error: a network failure is left alone
		{"timeout", blog, nil, nil, errors.New("i/o timeout"), "", ""},
		{"nil", blog, nil, nil, nil, "", ""},
	}
	for _, c := range cases {
		s, err := NewScript(nil, ScriptConfig{Name: "s.lua", Source: c.src, Keys: c.keys, Args: c.args, Limit: limit.Limit{Count: 10, Window: 60e9}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := s.Explain(c.err)
		name, _ := field.Name(got)
		if c.field == "" {
			if got != c.err {
				t.Errorf("%s: got %v, want the error unchanged", c.name, got)
			}
			continue
		}
		var ie *InputsError
		if name != c.field || !errors.As(got, &ie) {
			t.Fatalf("%s: got %v (field %q), want an InputsError naming %q", c.name, got, name, c.field)
		}
		if ie.Need() != c.missing {
			t.Errorf("%s: Need() = %q, want %q", c.name, ie.Need(), c.missing)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%s: the call's error is not in the chain", c.name)
		}
	}
}

func TestSuggestTemplate(t *testing.T) {
	cases := []struct{ code, table, want string }{
		{"local limit = tonumber(ARGV[1])", "ARGV", "{limit}"},
		{"local window = tonumber(ARGV[2])", "ARGV", "{window_s}"},
		{"local windowMs = tonumber(ARGV[2])", "ARGV", "{window_ms}"},
		{"local now = tonumber(ARGV[3])", "ARGV", "{now_ms}"},
		{"local now_us = ARGV[3]", "ARGV", "{now_us}"},
		{"local request_id = ARGV[4]", "ARGV", "{request_id}"},
		{"local cost = tonumber(ARGV[5])", "ARGV", "{cost}"},
		{"local max_requests = tonumber(ARGV[1])", "ARGV", "{limit}"},
		// the name assigned decides, not the other names on the line
		{"local ttl = tonumber(ARGV[2]) or limit", "ARGV", "{window_s}"},
		// a name that says nothing
		{"local x = ARGV[1]", "ARGV", ""},
		// a read outside an assignment: every name on the line
		{"redis.call('EXPIRE', KEYS[1], ARGV[2])", "ARGV", "{window_s}"},
		{"local k = KEYS[1]", "KEYS", "{key}"},
	}
	for _, c := range cases {
		if got := SuggestTemplate(c.code, c.table); got != c.want {
			t.Errorf("SuggestTemplate(%q) = %q, want %q", c.code, got, c.want)
		}
	}
}
