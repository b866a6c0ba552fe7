package vclock_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/vclock"
)

// Wire: what a client that sends commands one by one sends in their place.
func TestTableWire(t *testing.T) {
	t.Parallel()
	tb := vclock.NewTable()
	now := time.Unix(1767225600, 5000)
	src := "return redis.call('TIME')"
	sha, rw, err := tb.Register(src)
	if err != nil || len(sha) != 40 || !strings.Contains(rw, "__ratelab_td") {
		t.Fatalf("Register: %q, %v", sha, err)
	}
	cases := []struct {
		name string
		cmd  []string
		want []string // "*" matches any one argument (a SHA1)
		load bool     // a source to load comes with it
	}{
		{"a plain command runs in the runner", []string{"GET", "k"}, []string{"EVALSHA", "*", "2", "D", "W", "GET", "k", "1767225600000005"}, true},
		{"the runner once loaded is not handed out again", []string{"INCR", "k"}, []string{"EVALSHA", "*", "2", "D", "W", "INCR", "k", "1767225600000005"}, false},
		{"EVAL of a known script: its rewrite, keys then D, W", []string{"EVAL", src, "1", "k", "a"}, []string{"EVALSHA", "*", "3", "k", "D", "W", "a", "1767225600000005"}, true},
		{"EVALSHA by the script's own SHA1", []string{"evalsha", strings.ToUpper(sha), "0"}, []string{"EVALSHA", "*", "2", "D", "W", "1767225600000005"}, false},
		{"EVALSHA of an unknown script goes as it is", []string{"EVALSHA", strings.Repeat("0", 40), "0"}, []string{"EVALSHA", strings.Repeat("0", 40), "0"}, false},
		{"a bad key count goes as it is, for Redis to refuse", []string{"EVAL", src, "5"}, []string{"EVAL", src, "5"}, false},
		{"transactions go as they are", []string{"WATCH", "k"}, []string{"WATCH", "k"}, false},
		{"SCRIPT LOAD goes as it is", []string{"SCRIPT", "LOAD", "return 2"}, []string{"SCRIPT", "LOAD", "return 2"}, false},
	}
	for i, c := range cases {
		got, load := tb.Wire(now, "D", "W", c.cmd)
		match := len(got) == len(c.want)
		for j := 0; match && j < len(got); j++ {
			match = c.want[j] == "*" || got[j] == c.want[j]
		}
		if !match || (len(load) > 0) != c.load {
			t.Errorf("step %d (%s): got %q (load %d), want %q (load %v)", i, c.name, got, len(load), c.want, c.load)
		}
		for _, l := range load {
			tb.Loaded(l)
		}
	}
	if !tb.Known(sha) || tb.Known(strings.Repeat("0", 40)) {
		t.Error("Known")
	}
	if _, _, err := tb.Register("#!lua name=lib\nreturn 1"); err == nil {
		t.Error("a function library registered")
	}
	// SCRIPT LOAD made the script known
	if got, _ := tb.Wire(now, "D", "W", []string{"EVAL", "return 2", "0"}); slices.Equal(got, []string{"EVAL", "return 2", "0"}) {
		t.Errorf("EVAL of a script loaded by SCRIPT LOAD: %q", got)
	}
}
