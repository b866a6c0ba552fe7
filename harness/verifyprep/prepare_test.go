package verifyprep

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/harness/verify"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	_ = srv.Close() // the tests' own server
	os.Exit(code)
}

// Prepare checks the limits before it touches the Redis, then guards the
// script (on a Redis ratelab did not start: compiled, tried on a
// throwaway server, run as a temporary ACL user), says how it runs, and
// builds the limiter on the connection to use, with a new run id; a
// limiter that cannot be built, or a script that does not compile, is a
// *targets.SpecError naming the spec, and nothing is left guarded.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	base := verify.Config{Timeout: time.Second, MaxOutage: time.Second}
	ten := Limits{Given: []limit.Limit{{Count: 10, Window: time.Second}}, Gave: true}
	fw := targets.Spec{Algorithm: "fixed-window"}
	good := targets.Spec{Name: "good.lua", Script: "good.lua", Source: "return 1\n"}
	bad := targets.Spec{Name: "bad.lua", Script: "bad.lua", Source: "return 1 +\n"}
	started := srv.Redis
	// the same server seen as the user's own: the script is guarded there
	users := server.New(redis.NewClient(&redis.Options{Addr: srv.Info.Addr}), srv.Info, nil)
	users.Info.Mode = "url"
	defer func() { _ = users.Close() }()
	for _, tc := range []struct {
		name  string
		rd    *server.Redis
		plan  *Plan // nil: Prepare's own Check of spec and ls
		spec  targets.Spec
		ls    Limits
		field string     // the error's field; "" for none
		told  bool       // Told was told
		mode  guard.Mode // when no error
	}{
		// the built-in's limiter, built on the Redis
		{name: "built-in", rd: started, spec: fw, ls: ten, told: true},
		// no limit: refused before the Redis is touched (there is none)
		{name: "no limit", spec: fw, ls: Limits{}, field: "limit"},
		// a script on a server ratelab started needs no guard
		{name: "script on a started server", rd: started, spec: good, ls: ten, told: true},
		// on the user's Redis: guarded, after the probe
		{name: "script guarded", rd: users, spec: good, ls: ten, told: true, mode: guard.Guarded},
		// a script that does not compile: refused before the limiter is built
		{name: "script refused", rd: started, spec: bad, ls: ten, field: "script"},
		// a limiter that cannot be built for its limits (a Plan not made
		// by Check): told how the script runs, then refused
		{name: "limiter refused", rd: started, plan: &Plan{Config: verify.Config{Limits: []limit.Limit{{Count: 10}}}, Spec: fw}, field: "window", told: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var modes []guard.Mode
			g := Guard{Told: func(m guard.Mode) { modes = append(modes, m) }}
			var p *Prepared
			var err error
			if tc.plan != nil {
				p, err = tc.plan.Open(ctx, tc.rd, g)
			} else {
				p, err = Prepare(ctx, tc.rd, base, tc.spec, tc.ls, g)
			}
			name, _ := field.Name(err)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case name != tc.field:
				t.Fatalf("got %v (field %q), want an error naming %q", err, name, tc.field)
			case err != nil && p != nil:
				t.Errorf("got a Prepared with the error %v", err)
			}
			if se := (*targets.SpecError)(nil); tc.plan != nil && (!errors.As(err, &se) || se.Spec.Algorithm != tc.plan.Spec.Algorithm) {
				t.Errorf("got %v, want a *targets.SpecError naming the spec", err)
			}
			if (len(modes) == 1) != tc.told || len(modes) > 1 {
				t.Errorf("Told %v, want once: %v", modes, tc.told)
			}
			if err != nil {
				return
			}
			defer p.Close()
			if p.Mode != tc.mode || modes[0] != tc.mode {
				t.Errorf("mode %v (told %v), want %v", p.Mode, modes[0], tc.mode)
			}
			if p.Config.RunID == "" || len(p.Config.Limits) != 1 || p.Spec.Name != tc.spec.Name {
				t.Errorf("got config %+v, spec %+v", p.Config, p.Spec)
			}
			key := server.KeyPrefix + p.Config.RunID + ":k" // the run's keys: the guard lets them through
			d, err := p.Limiter.Allow(ctx, key, 1, algorithms.At(time.Unix(100, 0)))
			if err != nil || !d.Allowed {
				t.Errorf("the limiter's first decision: %+v, %v; want allowed", d, err)
			}
			p.Close()
			p.Close() // twice: nothing more
		})
	}
}
