package targets

import (
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

// Spec is one target as the user describes it, on the command line or in a
// target file: a built-in algorithm, a Lua script with its keys,
// arguments and reply predicate, or an HTTP endpoint. Exactly one of
// Algorithm, Script and HTTP is set.
type Spec struct {
	// From says where the spec came from, for errors: "--script" or the
	// target file's path.
	From string
	// Name labels the target's rows (a script's file name by default).
	Name      string
	Algorithm string
	HTTP      string
	// Script is the Lua file's path, Source its text.
	Script, Source string
	// Keys and Args are KEYS and ARGV templates (algorithms.ScriptConfig).
	Keys, Args []string
	// Allowed judges the script's reply (ReplyIs(1) unless told).
	Allowed algorithms.ReplyPredicate
	// Limits are the target file's limits (none on the command line).
	Limits []limit.Limit
}

// Build makes the limiter of s for l on rdb (rdb is unused for HTTP). l's
// Precision reaches bucketed-hash only. Errors are field errors ("http",
// "keys", "args", "allowed", ...) or the registry's unknown-algorithm error.
func (s Spec) Build(rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
	if s.Algorithm != "bucketed-hash" {
		l.Precision = 0
	}
	switch {
	case s.HTTP != "":
		h, err := algorithms.NewHTTPLimiter(s.HTTP, l, 5*time.Second)
		if err != nil {
			return nil, &field.Error{Name: "http", Err: err}
		}
		return h, nil
	case s.Script != "":
		return algorithms.NewScript(rdb, algorithms.ScriptConfig{Name: s.Name, Source: s.Source,
			Keys: s.Keys, Args: s.Args, Allowed: s.Allowed, Limit: l})
	}
	return algorithms.New(s.Algorithm, rdb, l)
}
