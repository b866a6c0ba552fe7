package vclock

import (
	"slices"
	"testing"
)

func TestFindInputs(t *testing.T) {
	cases := []struct {
		name, src string
		want      []Input
	}{
		// the blog-style fixed window: its limit and window from ARGV
		{"literal indices", "local limit = tonumber(ARGV[1])\nlocal n = redis.call('INCR', KEYS[1])\nredis.call('EXPIRE', KEYS[1], ARGV[2])\n",
			[]Input{{"KEYS", 1, 2}, {"ARGV", 1, 1}, {"ARGV", 2, 3}}},
		// each index once, at its first line, in index order
		{"repeats and order", "local b = ARGV[ 3 ]\nlocal a = ARGV[1]\nlocal c = ARGV[3]\n",
			[]Input{{"ARGV", 1, 2}, {"ARGV", 3, 1}}},
		// comments and strings are not code; a field of another table is not ARGV
		{"comments, strings, fields", "-- ARGV[1] is the limit\nlocal s = 'ARGV[2]'\n--[[ KEYS[9] ]]\nlocal x = cfg.ARGV\nreturn redis.call('GET', KEYS[1])\n",
			[]Input{{"KEYS", 1, 5}}},
		// a computed read, a count and the table passed whole: Index 0, once
		{"computed", "for i = 1, #ARGV do\n  redis.call('SADD', KEYS[1], ARGV[i])\nend\nreturn unpack(ARGV)\n",
			[]Input{{"KEYS", 1, 2}, {"ARGV", 0, 1}}},
		// a clock-less script reads no ARGV at all
		{"none", "local n = redis.call('INCR', KEYS[1])\nif n == 1 then redis.call('EXPIRE', KEYS[1], 60) end\nreturn n <= 10 and 1 or 0\n",
			[]Input{{"KEYS", 1, 1}}},
		// a function library's shebang keeps the line numbers
		{"shebang", "#!lua name=rl\nredis.register_function('rl', function(keys, args) return args[1] end)\n", []Input{}},
	}
	for _, c := range cases {
		got, err := FindInputs(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := FindInputs("local s = 'unfinished\n"); err == nil {
		t.Error("an unlexable script: got no error")
	}
	if s := (Input{"ARGV", 2, 7}).String(); s != "ARGV[2]" {
		t.Errorf("String: got %q, want ARGV[2]", s)
	}
	if s := (Input{Table: "ARGV"}).String(); s != "ARGV" {
		t.Errorf("String of a computed read: got %q, want ARGV", s)
	}
}
