package server

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// TempUser is a one-time ACL user of the user's Redis for a program that
// ratelab starts and that takes credentials only on its command line
// (redis-benchmark's --user and -a), where every user of the machine can
// read them (ps, /proc/PID/cmdline): the program gets this user instead
// of the user's own login, whose password never leaves ratelab. Its
// password is random and good only for the keys under one prefix and the
// commands a guarded script may run (Guard), plus SELECT when the
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
	user, pass, err := setGuardUser(ctx, admin, prefix, extra...)
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
