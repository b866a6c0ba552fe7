package custom

import (
	"strings"
	"sync"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/vclock"
)

// A set-up script (ScriptConfig.Setup) runs once per key, before the
// key's first call, with the same KEYS and ARGV: it stores what a
// published limiter expects to find in Redis before its first request (a
// rate in a hash, a configuration key). The first call of each key runs
// one script made of both, set-up first (withSetup), so the two are one
// atomic call: on the same connection, under the same guard, with the same
// keys (removed with the run's), on the same injected clock, and, in a
// pipeline, in the same round trip with the same key expiry emulation as
// any call.

// setupScript is the set-up of a ScriptLimiter: the combined script of
// first calls, rewritten for virtual time when it calls TIME, and the keys
// that have had their first call.
type setupScript struct {
	script   algorithms.LuaScript
	vt       *vclock.Script
	vtScript algorithms.LuaScript
	seen     sync.Map // request key -> struct{}
}

// newSetupScript combines setup with main (withSetup).
func newSetupScript(main, setup string) *setupScript {
	src := withSetup(main, setup)
	s := &setupScript{script: algorithms.NewLuaScript(src)}
	if vt, err := vclock.Rewrite(src, vclock.Options{Time: true}); err == nil && vt.TimeCalls > 0 {
		s.vt, s.vtScript = &vt, algorithms.NewTimeScript(vt, src)
	}
	return s
}

// first reports whether key has not had a call yet, and marks it as had.
// Safe for concurrent use: exactly one caller is told true per key.
func (s *setupScript) first(key string) bool {
	_, had := s.seen.LoadOrStore(key, struct{}{})
	return !had
}

// withSetup is one script that runs setup, then main, with the same KEYS
// and ARGV, and returns main's reply. main's lines keep their numbers (so
// Redis's "user_script:N" errors point at them): its first line (after a
// "#!" line, which stays first) starts the function that wraps it; setup
// follows it in a function of its own.
func withSetup(main, setup string) string {
	shebang := ""
	if strings.HasPrefix(main, "#!") {
		if i := strings.IndexByte(main, '\n'); i >= 0 {
			shebang, main = main[:i+1], main[i+1:]
		} else {
			shebang, main = main+"\n", ""
		}
	}
	return shebang + "local __ratelab_main = function() " + main +
		"\nend\nlocal __ratelab_setup = function()\n" + setup +
		"\nend\n__ratelab_setup()\nreturn __ratelab_main()\n"
}
