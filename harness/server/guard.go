package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
)

// ErrNoGuard is wrapped by NewGuard when the user's data cannot be guarded
// from a script: the server is a Cluster, or it refused to create an ACL
// user (no ACL permission, or a Redis older than 6).
var ErrNoGuard = errors.New("cannot guard the server's other data from the script")

// Guard is a temporary ACL user of the user's Redis under which a user's
// script runs, so that the script cannot harm the rest of the server: it
// may touch only keys under one prefix (ratelab's own "ratelab:<run id>:")
// of the database ratelab's connection uses, and run no @dangerous or
// @admin command (FLUSHALL, FLUSHDB, KEYS, CONFIG, DEBUG, SHUTDOWN,
// SWAPDB, MIGRATE, ...) nor one that reaches another database (SELECT,
// MOVE, COPY: ACL cannot tell COPY's DB option apart, so COPY is denied
// whole), so that ratelab's cleanup, which scans that database, finds
// every key the script could write. Redis checks the commands a script calls against
// the user that runs it, so a script that tries is answered NOPERM, which
// ratelab reports as the script's error instead of running it. Close
// removes the user.
type Guard struct {
	// Client is a connection to the same server as the user under guard:
	// run the script's calls on it (EVALSHA, EVAL, SCRIPT LOAD). Safe for
	// concurrent use.
	Client *redis.Client
	user   string
	admin  *redis.Client
}

// NewGuard creates the ACL user on rd (a single server) for keys under
// prefix. Errors wrap ErrNoGuard when rd cannot have one (a Cluster, ACL
// refused); ratelab's own throwaway servers need none.
func NewGuard(ctx context.Context, rd *Redis, prefix string) (*Guard, error) {
	admin, ok := rd.Client.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("%w: a Redis Cluster keeps ACL users per node", ErrNoGuard)
	}
	user, pass, err := setGuardUser(ctx, admin, prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoGuard, err)
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
	Track(gc)
	return &Guard{Client: gc, user: user, admin: admin}, nil
}

// setGuardUser creates on admin's server a user with a random password
// for the keys under prefix and the commands a guarded script may run
// (Guard), then the rules extra; it returns the user and its password.
// The error is the server's refusal ("ACL SETUSER: NOPERM ...").
func setGuardUser(ctx context.Context, admin *redis.Client, prefix string, extra ...any) (user, pass string, err error) {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24)
	// named by the run, so that `ratelab clean` can tie a user left by a
	// killed run to it (GuardUserPrefix)
	user, pass = GuardUserPrefix+hex.EncodeToString(b[:4]), hex.EncodeToString(b[4:])
	if id := strings.TrimSuffix(strings.TrimPrefix(prefix, KeyPrefix), ":"); IsRunID(id) {
		user = GuardUserPrefix + id
	}
	rules := []any{"ACL", "SETUSER", user, "reset", "on", ">" + pass, "~" + prefix + "*", "resetchannels",
		"+@all", "-@dangerous", "-@admin", "+info"}
	rules = append(rules, guardDenied...)
	err = admin.Do(ctx, append(rules, extra...)...).Err()
	if err != nil && strings.Contains(err.Error(), "-copy") {
		// a Redis older than 6.2 has no COPY: nothing to deny
		err = admin.Do(ctx, append(rules[:len(rules)-1], extra...)...).Err()
	}
	if err != nil {
		return "", "", fmt.Errorf("ACL SETUSER: %w", err)
	}
	return user, pass, nil
}

// guardDenied are the commands a guarded script may not call besides
// @dangerous and @admin: those that reach another database, or name one
// (the deny of the @dangerous ones is repeated in case a server files them
// elsewhere). COPY comes last: NewGuard drops it on a server without it.
var guardDenied = []any{"-select", "-swapdb", "-move", "-migrate", "-flushdb", "-flushall", "-copy"}

// Close closes the guarded connection and removes the ACL user, also when
// ctx is cancelled (within a few seconds). The error, naming the user, is
// the removal's: the user may be left on the server.
func (g *Guard) Close(ctx context.Context) error {
	_ = g.Client.Close() // ratelab's own connection; what matters is the user's removal
	cctx, cancel := CleanupContext(ctx, 2*1e9)
	defer cancel()
	if err := g.admin.Do(cctx, "ACL", "DELUSER", g.user).Err(); err != nil {
		return fmt.Errorf("ACL DELUSER %s: %w", g.user, err)
	}
	return nil
}

// ErrRefusedByGuard is wrapped by the error of a run stopped because the
// script under guard tried to touch what is not ratelab's.
var ErrRefusedByGuard = errors.New("the script tried to touch data outside ratelab's keys or to run a dangerous command; refused (a trusted script runs unguarded)")

// IsGuardRefusal reports whether err is Redis refusing a script a command
// or a key (in the words Redis 7 uses for a script's calls).
func IsGuardRefusal(err error) bool {
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
// nothing: Close the Guard and the original Redis.
func (g *Guard) Redis(rd *Redis) *Redis {
	return &Redis{Client: g.Client, Info: rd.Info}
}

// Started reports whether rd is a server ratelab started itself (engine
// modes exec, container and cluster): a user's script can harm nothing
// there.
func Started(rd *Redis) bool {
	switch rd.Info.Mode {
	case "exec", "container", "cluster":
		return true
	}
	return false
}

// GuardScript is ratelab's policy for a user's script on rd, for the run
// runID (issue 14): on a server ratelab started (Started), or when the
// user trusts the script, it needs no guard and GuardScript returns nil,
// nil. Otherwise the script's calls must run under a Guard for the run's
// keys (KeyPrefix + runID + ":"), which GuardScript creates and the caller
// closes; viaLimiter says whether the command sends the script's calls
// through its limiter, where a guard can take them (run, verify); a command
// that pipelines them on connections of its own (capacity, bench) cannot
// be guarded and is refused. A refusal, and a server that cannot have a
// Guard (ErrNoGuard), is a *field.Error naming "script"; any other error
// of creating the guard one naming "redis".
func GuardScript(ctx context.Context, rd *Redis, runID string, trust, viaLimiter bool) (*Guard, error) {
	if Started(rd) || trust {
		return nil, nil
	}
	if !viaLimiter {
		return nil, field.Errorf("script", "on your own Redis a script could touch keys that are not ratelab's (FLUSHALL, other keys), and this command cannot guard it")
	}
	g, err := NewGuard(ctx, rd, KeyPrefix+runID+":")
	if errors.Is(err, ErrNoGuard) {
		return nil, field.Errorf("script", "%w", err)
	}
	if err != nil {
		return nil, field.Errorf("redis", "%w", err)
	}
	return g, nil
}
