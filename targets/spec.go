package targets

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/custom/execlimiter"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/limit"
	"github.com/redis/go-redis/v9"
)

// Spec is one target as the user describes it, on the command line or in a
// target file: a built-in algorithm, a Lua script with its keys,
// arguments and reply predicate, an HTTP endpoint, or an exec adapter.
// Exactly one of Algorithm, Script, HTTP, Exec and Func is set.
type Spec struct {
	// From says where the spec came from, for errors: the target file's
	// path; "" for a spec given directly (Given).
	From string
	// Name labels the target's rows (a script's file name by default).
	Name      string
	Algorithm string
	HTTP      string
	// Script is the Lua file's path, Source its text.
	Script, Source string
	// Keys and Args are KEYS and ARGV templates (custom.ScriptConfig).
	Keys, Args []string
	// Allowed judges the script's reply (ReplyIs(1) unless told);
	// AllowedExpr is its expression as written, or AllowedWhen the
	// shorthand's integer ("" and nil: the default, the reply is 1).
	Allowed     custom.ReplyPredicate
	AllowedExpr string
	AllowedWhen *int64
	// Setup is a set-up script's path, SetupSource its text: run once per
	// key before its first call, with the same Keys and Args
	// (custom.ScriptConfig.Setup); "" when none. Scripts only.
	Setup, SetupSource string
	// Limits are the target file's limits (none on the command line).
	Limits []limit.Limit
	// Exec is an adapter's command (execlimiter: `sh -c Exec` once per
	// simulated client, its Redis on the virtual clock); ExecDir is its
	// working directory ("" for the current one; a target file's
	// directory for the file's exec).
	Exec, ExecDir string
	// Func is a Go function target (custom.Func), given from Go only
	// (ratelabtest.VerifyFunc): run on an endpoint on the virtual clock
	// (custom.FuncLimiter).
	Func custom.Func
	// UnitCost: the Func decides one unit per request (custom.FuncConfig).
	UnitCost bool
	// ClientSide runs the Script client-side (custom.ClientSide: every
	// redis.call its own round trip from ratelab) instead of as one atomic
	// script in Redis. Only with Script.
	ClientSide bool
	// FCall, when not "", makes the target a function: Script is then the
	// path of a function library ("#!lua name=..."), Source its text, and
	// each call is FCALL of its function FCall (custom.ScriptConfig.FCall).
	FCall string
	// Namespace is the name prefix the function's libraries load under on
	// the command's Redis (custom.FunctionLibraries), set by whoever loads
	// them (the guard) before Build; "" for a script.
	Namespace string
}

// Flag is the command-line flag of s's Lua file: "--function" for a
// function library, else "--script".
func (s Spec) Flag() string {
	if s.FCall != "" {
		return "--function"
	}
	return "--script"
}

// LimitsOr returns the limits to build s for: given, the caller's, unless
// the caller gave none (gave false) and s has limits of its own (a target
// file's), then a copy of them all, own true.
func (s Spec) LimitsOr(given []limit.Limit, gave bool) (ls []limit.Limit, own bool) {
	if !gave && len(s.Limits) > 0 {
		return slices.Clone(s.Limits), true
	}
	return given, false
}

// CheckLimits says whether s can be built for every limit of ls at once:
// one limit always can; several need a target that enforces them all
// (bucketed-hash) or that keeps its own (a script, whose templates get the
// first limit, an HTTP endpoint, or an exec adapter, told the first). A built-in algorithm of one limit is
// refused with a field error named "limits" giving the reason. No limit at
// all is a field error named "limit".
func (s Spec) CheckLimits(ls []limit.Limit) error {
	switch {
	case len(ls) == 0:
		return field.Errorf("limit", "none given")
	case len(ls) > 1 && s.Algorithm != "" && s.Algorithm != "bucketed-hash":
		return field.Errorf("limits", "%s enforces one limit, and %d were given (%s): several at once need bucketed-hash, a script, an HTTP endpoint or an exec adapter",
			s.Algorithm, len(ls), describe(ls))
	}
	return nil
}

// Build makes the limiter of s for the limits ls on rdb (rdb is unused
// for HTTP; an exec target needs a *redis.Client, one node, and its
// caller closes it: execlimiter.Limiter.Close, an io.Closer): the one code path from limits to a limiter, for the command
// line and target files alike. One limit builds any target; several build
// bucketed-hash enforcing them all, or a script (its templates' {limit}
// and {window_*} are the first) or an HTTP endpoint (judged against all
// of them), and are refused for the other built-ins (CheckLimits); an
// exec adapter is told the first (RATELAB_LIMIT, RATELAB_WINDOW_MS) and
// judged against all. Precision reaches bucketed-hash only. Errors are
// field errors ("limit", "limits", "window", "http", "exec", "keys",
// "args", "allowed", ...) or the registry's unknown-algorithm error.
func (s Spec) Build(rdb redis.Scripter, ls ...limit.Limit) (algorithms.Limiter, error) {
	if err := s.CheckLimits(ls); err != nil {
		return nil, err
	}
	l := ls[0]
	if s.Algorithm != "bucketed-hash" {
		l.Precision = 0
	}
	switch {
	case s.Func != nil:
		return custom.NewFunc(context.Background(), rdb, custom.FuncConfig{Name: s.Name, Fn: s.Func, Limit: l, UnitCost: s.UnitCost})
	case s.HTTP != "":
		h, err := custom.NewHTTPLimiter(s.HTTP, l, 5*time.Second)
		if err != nil {
			return nil, &field.Error{Name: "http", Err: err}
		}
		return h, nil
	case s.FCall != "":
		return custom.NewScript(rdb, custom.ScriptConfig{Name: s.Name, Source: s.Source, FCall: s.FCall, Namespace: s.namespace(),
			Keys: s.Keys, Args: s.Args, Allowed: s.Allowed, Limit: l})
	case s.Exec != "":
		rc, ok := rdb.(*redis.Client)
		if !ok {
			return nil, field.Errorf("exec", "needs one Redis server (an adapter's commands reach it through ratelab's endpoint), not %T", rdb)
		}
		return execlimiter.New(context.Background(), rc, execlimiter.Config{Name: s.Name, Command: s.Exec, Dir: s.ExecDir, Limit: l})
	case s.Script != "" && s.ClientSide:
		return custom.NewClientSide(rdb, custom.ScriptConfig{Name: s.Name, Source: s.Source,
			Keys: s.Keys, Args: s.Args, Allowed: s.Allowed, Limit: l})
	case s.Script != "":
		return custom.NewScript(rdb, custom.ScriptConfig{Name: s.Name, Source: s.Source,
			Keys: s.Keys, Args: s.Args, Allowed: s.Allowed, Limit: l, Setup: s.SetupSource})
	case len(ls) > 1: // bucketed-hash
		return algorithms.NewBucketedHash(rdb, ls...)
	}
	return NewAlgorithm(s.Algorithm, rdb, l)
}

// namespace is s.Namespace, or a name to check the library with before
// anything is loaded (Load builds every target once, without Redis).
func (s Spec) namespace() string {
	if s.Namespace != "" {
		return s.Namespace
	}
	return "ratelab_check"
}

// describe joins the limits' String forms: "10 per 1s, 120 per 1m".
func describe(ls []limit.Limit) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ", ")
}

// Label is the name to call s by in messages and summaries: its Name,
// else its Algorithm, HTTP endpoint, Script path or Exec command, else
// "target".
func (s Spec) Label() string {
	for _, n := range []string{s.Name, s.Algorithm, redact.URL(s.HTTP), s.Script, s.Exec} {
		if n != "" {
			return n
		}
	}
	return "target"
}

// SourceFile is the file a CI tool should point at for s: its target file
// (From, unless "-", stdin), else its Script; "" for neither.
func (s Spec) SourceFile() string {
	if s.From != "" && s.From != "-" {
		return s.From
	}
	return s.Script
}
