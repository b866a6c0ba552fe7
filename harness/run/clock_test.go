package run

import (
	"testing"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/targets"
)

// Every script a run takes runs on its clock, or the run is refused
// before it starts, naming the clock: none is left out of a scenario with
// a note.
func TestValidateClocks(t *testing.T) {
	const clockless = "local n = redis.call('INCR', KEYS[1])\nif n == 1 then redis.call('EXPIRE', KEYS[1], 60) end\nreturn n <= 10 and 1 or 0\n"
	const readsTime = "local t = redis.call('TIME')\nreturn 1\n"
	script := func(src string, keys ...string) targets.Target {
		return targets.Spec{Name: "mine.lua", Script: "mine.lua", Source: src, Keys: keys}.Target()
	}
	perWindow := []string{"{key}:{floor(now_ms / window_ms)}"}
	for _, c := range []struct {
		name  string
		t     targets.Target
		clock harness.ClockMode
		field string // "" for no error
	}{
		// a script that reads no clock: virtual time reaches it through its key TTLs
		{"clock-less, virtual", script(clockless), harness.VirtualClock, ""},
		{"clock-less, default clock", script(clockless), "", ""},
		{"clock-less, redis", script(clockless), harness.RedisClock, ""},
		// Redis TIME: rewritten onto the virtual clock
		{"TIME, virtual", script(readsTime), harness.VirtualClock, ""},
		// a key named by the time needs a time to name it by
		{"clock key, redis", script(clockless, perWindow...), harness.RedisClock, "clock"},
		{"clock key, client", script(clockless, perWindow...), harness.ClientClock, ""},
		{"clock key, virtual", script(clockless, perWindow...), harness.VirtualClock, ""},
	} {
		cfg := Config{Algorithms: []string{"fixed-window"}, Targets: []targets.Target{c.t}, Clock: c.clock}
		err := cfg.Validate()
		if name, _ := field.Name(err); name != c.field || (c.field == "") != (err == nil) {
			t.Errorf("%s: got %v, want an error on field %q", c.name, err, c.field)
		}
	}
}
