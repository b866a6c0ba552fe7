package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/usercmd"
)

// TempUser is a one-time ACL user of the user's Redis for a program that
// ratelab starts and that takes credentials only on its command line
// (redis-benchmark's --user and -a), where every user of the machine can
// read them (ps, /proc/PID/cmdline): the program gets this user instead
// of the user's own login, whose password never leaves ratelab. Its
// password is random and good only for the keys under one prefix and the
// commands a guarded script may run (package harness/guard), plus SELECT when the
// connection uses a database other than 0 (ACL cannot name which, so the
// user may select any: its keys are still only those under the prefix);
// Close removes the user, and `ratelab clean` one
// a killed run left (it is named by the run, GuardUserPrefix).
type TempUser struct {
	User, Password string
	// DB is the database the program must select (0: none).
	DB    int
	admin *redis.Client
}

// NewTempUser creates the user on rd (a single server) for keys under
// prefix. Errors say why rd cannot have one: a Cluster, or the server's
// refusal ("ACL SETUSER: NOPERM ..." when the login may not create users).
func NewTempUser(ctx context.Context, rd *Redis, prefix string) (*TempUser, error) {
	admin, ok := rd.Client.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("a Redis Cluster keeps ACL users per node")
	}
	db := admin.Options().DB
	var extra []string
	if db != 0 {
		extra = append(extra, "+select")
	}
	user, pass, err := SetUser(ctx, admin, prefix, extra...)
	if err != nil {
		return nil, err
	}
	return &TempUser{User: user, Password: pass, DB: db, admin: admin}, nil
}

// Close removes the user, also when ctx is cancelled (within a few
// seconds). The error, naming the user, is the removal's: the user may be
// left on the server.
func (u *TempUser) Close(ctx context.Context) error {
	cctx, cancel := CleanupContext(ctx, 2*1e9)
	defer cancel()
	if err := u.admin.Do(cctx, "ACL", "DELUSER", u.User).Err(); err != nil {
		return fmt.Errorf("ACL DELUSER %s: %w", u.User, err)
	}
	return nil
}

// SetUser creates on admin's server a user with a random password,
// named by the run of prefix when it has one, for the keys under prefix
// and the commands of usercmd.ACLRules, then the rules extra; it returns
// the user and its password. A deny rule the server refuses (a command it
// does not know: COPY before Redis 6.2, FUNCTION before 7; a subcommand it
// cannot deny: before 7) is dropped and the rest tried again: what a
// server does not have needs no deny, and what it cannot deny by
// subcommand a script cannot call (SCRIPT, CLIENT are not allowed from
// scripts). The error is the server's refusal ("ACL SETUSER: NOPERM ...").
func SetUser(ctx context.Context, admin *redis.Client, prefix string, extra ...string) (user, pass string, err error) {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24)
	// named by the run, so that `ratelab clean` can tie a user left by a
	// killed run to it (GuardUserPrefix)
	user, pass = GuardUserPrefix+hex.EncodeToString(b[:4]), hex.EncodeToString(b[4:])
	if id := strings.TrimSuffix(strings.TrimPrefix(prefix, KeyPrefix), ":"); IsRunID(id) {
		user = GuardUserPrefix + id
	}
	rules := usercmd.ACLRules()
	deny := map[string]bool{}
	for _, r := range usercmd.DenyRules() {
		deny[r] = true
	}
	for {
		args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + pass, "~" + prefix + "*"}
		for _, r := range append(rules, extra...) {
			args = append(args, r)
		}
		err := admin.Do(ctx, args...).Err()
		if err == nil {
			return user, pass, nil
		}
		i := slices.IndexFunc(rules, func(r string) bool { return deny[r] && strings.Contains(err.Error(), "'"+r+"'") })
		if i < 0 {
			return "", "", fmt.Errorf("ACL SETUSER: %w", err)
		}
		rules = slices.Delete(rules, i, i+1)
	}
}

// GuardUserPrefix begins the name of every ACL user ratelab creates (SetUser: a script guard's, a TempUser); the
// run id follows ("ratelab-guard-<run id>"), so that a user left by a
// killed run (kill -9 leaves it enabled, with its password) is found and
// removed by `ratelab clean` (package harness/leftovers).
const GuardUserPrefix = "ratelab-guard-"
