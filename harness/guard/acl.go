package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
)

// ErrCannotGuard is wrapped by NewACL when the user's data cannot be guarded
// from a script: the server is a Cluster, or it refused to create an ACL
// user (no ACL permission, or a Redis older than 6).
var ErrCannotGuard = errors.New("cannot guard the server's other data from the script")

// ACL is a temporary ACL user of the user's Redis under which a user's
// script runs, so that the script cannot harm the rest of the server: it
// may touch only keys under one prefix (ratelab's own "ratelab:<run id>:")
// of the database ratelab's connection uses, and run only the commands the
// policy on a user's commands allows (usercmd.ACLRules: no @dangerous or
// @admin command, no FUNCTION, no SCRIPT FLUSH or KILL, no SCAN, KEYS or
// RANDOMKEY, which list keys the prefix does not cover, nor one that
// reaches another database: SELECT, MOVE, COPY, whose DB option ACL cannot
// tell apart), so that ratelab's cleanup finds every key the script could
// write. Redis checks the commands a script calls against the user that
// runs it, so a script that tries is answered NOPERM, which ratelab
// reports as the script's error, naming the command (from ACL LOG),
// instead of running it. Close removes the user.
type ACL struct {
	// Client is a connection to the same server as the user under guard:
	// run the script's calls on it (EVALSHA, EVAL, SCRIPT LOAD). Safe for
	// concurrent use. ratelab's own SCAN of keys under the prefix (SCAN
	// MATCH, as ScanKeys sends it), which the user may not send, goes on
	// the connection NewACL was given instead.
	Client *redis.Client
	user   string
	admin  *redis.Client
}

// NewACL creates the ACL user on rd (a single server) for keys under
// prefix. Errors wrap ErrCannotGuard when rd cannot have one (a Cluster, ACL
// refused); ratelab's own throwaway servers need none.
func NewACL(ctx context.Context, rd *server.Redis, prefix string) (*ACL, error) {
	admin, ok := rd.Client.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("%w: a Redis Cluster keeps ACL users per node", ErrCannotGuard)
	}
	user, pass, err := server.SetUser(ctx, admin, prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotGuard, err)
	}
	opt := *admin.Options()
	if opt.DB == 0 {
		opt.Username, opt.Password = user, pass
		opt.CredentialsProvider, opt.CredentialsProviderContext, opt.StreamingCredentialsProvider = nil, nil, nil
	} else {
		// the guarded user may not SELECT: each connection selects the
		// database as the user's own login (go-redis's handshake), then
		// switches to the guarded user, keeping the database
		onConnect := opt.OnConnect
		opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			if onConnect != nil {
				if err := onConnect(ctx, cn); err != nil {
					return err
				}
			}
			return cn.AuthACL(ctx, user, pass).Err()
		}
	}
	gc := redis.NewClient(&opt)
	server.Track(gc)
	g := &ACL{Client: gc, user: user, admin: admin}
	gc.AddHook(guardHook{g: g, match: server.EscapeGlob(prefix)})
	return g, nil
}

// guardHook sends ratelab's own SCAN of keys under the guard's prefix on
// the admin connection (the guarded user may not SCAN), and names, in the
// error of a call the guard refused, the command refused (ACL LOG).
type guardHook struct {
	g     *ACL
	match string // the prefix, escaped for SCAN MATCH
}

func (h guardHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h guardHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "scan" && scanUnder(cmd.Args(), h.match) {
			return h.g.admin.Process(ctx, cmd)
		}
		err := next(ctx, cmd)
		if IsRefusal(err) {
			cmd.SetErr(h.g.named(ctx, err))
			return cmd.Err()
		}
		return err
	}
}

func (h guardHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if IsRefusal(c.Err()) {
				c.SetErr(h.g.named(ctx, c.Err()))
				if err != nil {
					err = c.Err()
				}
			}
		}
		return err
	}
}

// scanUnder reports whether the SCAN args (SCAN cursor [MATCH p] [COUNT n]
// [TYPE t]) have a MATCH, every one of them starting with match (a literal,
// escaped for SCAN MATCH): then only keys under the prefix are listed.
func scanUnder(args []any, match string) bool {
	found := false
	for i := 2; i+1 < len(args); i += 2 {
		opt, _ := args[i].(string)
		if !strings.EqualFold(opt, "match") {
			continue
		}
		p, _ := args[i+1].(string)
		if !strings.HasPrefix(p, match) {
			return false
		}
		found = true
	}
	return found
}

// named is err, a refusal of the guard, with the command refused, from
// the newest entry of the guard user's scripts in ACL LOG: "...: it called
// SCAN".
// A key refused is not named (the name may be a user's), nor a command
// when ACL LOG cannot be read: err is returned as it is.
func (g *ACL) named(ctx context.Context, err error) error {
	if !strings.Contains(err.Error(), "user executing the script can't") {
		return err // refused by its flags (not allowed from scripts), not logged: Redis names none
	}
	cctx, cancel := server.CleanupContext(ctx, time.Second)
	defer cancel()
	entries, lerr := g.admin.Do(cctx, "ACL", "LOG", "10").Slice()
	if lerr != nil {
		return err
	}
	for _, e := range entries {
		fields := map[string]string{}
		switch e := e.(type) {
		case []any: // RESP2: field, value, ...
			for i := 0; i+1 < len(e); i += 2 {
				k, _ := e[i].(string)
				fields[k] = fmt.Sprint(e[i+1])
			}
		case map[any]any: // RESP3
			for k, v := range e {
				fields[fmt.Sprint(k)] = fmt.Sprint(v)
			}
		}
		if fields["username"] != g.user || fields["context"] != "lua" {
			continue // another user's, or a command of ratelab's own
		}
		if fields["reason"] == "command" {
			return fmt.Errorf("%w: it called %s", err, strings.ToUpper(strings.ReplaceAll(fields["object"], "|", " ")))
		}
		return err
	}
	return err
}

// Close closes the guarded connection and removes the ACL user, also when
// ctx is cancelled (within a few seconds). The error, naming the user, is
// the removal's: the user may be left on the server.
func (g *ACL) Close(ctx context.Context) error {
	_ = g.Client.Close() // ratelab's own connection; what matters is the user's removal
	cctx, cancel := server.CleanupContext(ctx, 2*1e9)
	defer cancel()
	if err := g.admin.Do(cctx, "ACL", "DELUSER", g.user).Err(); err != nil {
		return fmt.Errorf("ACL DELUSER %s: %w", g.user, err)
	}
	return nil
}

// ErrRefused is wrapped by the error of a run stopped because the
// script under guard tried to touch what is not ratelab's.
var ErrRefused = errors.New("the script tried to touch data outside ratelab's keys or to run a dangerous command; refused (a trusted script runs unguarded)")

// IsRefusal reports whether err is Redis refusing a script a command
// or a key (in the words Redis 7 uses for a script's calls).
func IsRefusal(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	// only refusals of what a script called: a NOPERM for ratelab's own
	// command (an ACL user missing a permission) is the user's setup, not this
	for _, m := range []string{"user executing the script can't", "not allowed from script"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// Redis is the same server seen through the guard: every call of the
// command (the script's, and ratelab's own SCAN, UNLINK, TTLs, markers,
// all under the run's prefix) runs as the guarded user. Closing it closes
// nothing: Close the ACL and the original Redis.
func (g *ACL) Redis(rd *server.Redis) *server.Redis {
	return &server.Redis{Client: g.Client, Info: rd.Info}
}

// ForScript is ratelab's policy for a user's script on rd, for the run
// runID: on a server ratelab started (server.Started), or when the
// user trusts the script, it needs no guard and ForScript returns nil,
// nil. Otherwise the script's calls must run under an ACL for the run's
// keys (server.KeyPrefix + runID + ":"), which ForScript creates and the caller
// closes; viaLimiter says whether the command sends the script's calls
// through its limiter, where a guard can take them (run, verify); a command
// that pipelines them on connections of its own (capacity, bench) cannot
// be guarded and is refused. A refusal, and a server that cannot have an
// ACL (ErrCannotGuard), is a *field.Error naming "script"; any other error
// of creating the guard one naming "redis".
func ForScript(ctx context.Context, rd *server.Redis, runID string, trust, viaLimiter bool) (*ACL, error) {
	if server.Started(rd) || trust {
		return nil, nil
	}
	if !viaLimiter {
		return nil, field.Errorf("script", "on your own Redis a script could touch keys that are not ratelab's (FLUSHALL, other keys), and this command cannot guard it")
	}
	g, err := NewACL(ctx, rd, server.KeyPrefix+runID+":")
	if errors.Is(err, ErrCannotGuard) {
		return nil, field.Errorf("script", "%w", err)
	}
	if err != nil {
		return nil, field.Errorf("redis", "%w", err)
	}
	return g, nil
}
