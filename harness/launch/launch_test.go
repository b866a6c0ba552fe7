package launch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/guard"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/outdir"
	"github.com/ratelab/ratelab/targets"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	srv = redistest.Start()
	code := m.Run()
	_ = srv.Close() // the tests' own server
	os.Exit(code)
}

// Start opens the results directory, then the Redis, then the guard, and
// undoes what it opened when a later step fails: the directory it created
// is removed, and a Redis opened before a refused script is closed.
func TestStart(t *testing.T) {
	defer outdir.ReleaseAll()
	ctx := context.Background()
	errOpen := errors.New("no Redis here")
	bad := targets.Spec{Name: "bad.lua", Script: "bad.lua", Source: "return 1 +\n"}
	good := targets.Spec{Name: "good.lua", Script: "good.lua", Source: "return 1\n"}
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		out      string // "" : a new directory under a temporary one
		results  bool
		openErr  error // Open's error; nil opens a connection to srv
		noOpen   bool  // Config.Open nil (an HTTP target)
		specs    []targets.Spec
		announce bool
		field    string // the error's field; "" for none
		wantErr  error  // an error the result must wrap
		opened   bool   // Open was called
		dir      bool   // the directory is there afterwards
	}{
		// every step, the Redis announced
		{name: "results and Redis", results: true, announce: true, specs: []targets.Spec{good}, opened: true, dir: true},
		// no directory asked for, none made
		{name: "no results", opened: true},
		// no Redis: nothing opened, nothing guarded
		{name: "no Redis", noOpen: true, specs: []targets.Spec{good}},
		// a directory holding others' files is refused before Redis is opened
		{name: "foreign out", out: foreign, results: true, field: "out", dir: true},
		// Open's error as it is; the directory made for it removed
		{name: "Redis fails", results: true, openErr: errOpen, wantErr: errOpen, opened: true},
		// a script that does not compile: refused after Redis, the directory removed
		{name: "script refused", results: true, specs: []targets.Spec{bad}, field: "script", opened: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "new")
			}
			var rd *server.Redis
			var modes []guard.Mode
			cfg := Config{RunID: "launchtest", Results: tc.results, Out: out, Announce: tc.announce, Specs: tc.specs,
				Guarded: func(m guard.Mode) { modes = append(modes, m) }}
			if !tc.noOpen {
				cfg.Open = func(context.Context) (*server.Redis, error) {
					if tc.openErr != nil {
						rd = &server.Redis{}
						return nil, tc.openErr
					}
					rd = server.New(redis.NewClient(&redis.Options{Addr: srv.Info.Addr}), srv.Info, nil)
					return rd, nil
				}
			}
			var progress bytes.Buffer
			l, err := Start(ctx, cfg, &progress)
			name, _ := field.Name(err)
			switch {
			case tc.field == "" && tc.wantErr == nil && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.field != "" && name != tc.field:
				t.Errorf("got %v (field %q), want an error naming %q", err, name, tc.field)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("got %v, want %v", err, tc.wantErr)
			case err != nil && l != nil:
				t.Errorf("got a Launch with the error %v", err)
			}
			// told once the guard is in place
			if guarded := tc.field != "out" && tc.field != "script" && tc.wantErr == nil; guarded != (len(modes) == 1) {
				t.Errorf("Guarded told %v, want once: %v", modes, guarded)
			}
			if got := rd != nil; got != tc.opened {
				t.Errorf("Open called: got %v, want %v", got, tc.opened)
			}
			if _, statErr := os.Stat(out); (statErr == nil) != tc.dir {
				t.Errorf("%s there afterwards: got %v, want %v", out, statErr == nil, tc.dir)
			}
			if err != nil {
				if rd != nil && rd.Client != nil && rd.Client.Ping(ctx).Err() == nil {
					t.Errorf("the Redis opened before the error was left open")
				}
				return
			}
			defer l.Close()
			if tc.results && l.Dir != out {
				t.Errorf("Dir: got %q, want %q", l.Dir, out)
			}
			if got, want := l.Redis != nil, !tc.noOpen; got != want {
				t.Errorf("Redis set: got %v, want %v", got, want)
			}
			if l.Mode != guard.Unguarded || l.Scripts != nil { // srv is a server ratelab started
				t.Errorf("got mode %v, scripts %v, want unguarded", l.Mode, l.Scripts)
			}
			if got := strings.Contains(progress.String(), "ratelab: Redis "+srv.Info.Version+" at "+srv.Info.Addr+" (exec)\n"); got != tc.announce {
				t.Errorf("announced: got %v, want %v (progress %q)", got, tc.announce, progress.String())
			}
			l.Close()
			if l.Redis != nil && rd.Client.Ping(ctx).Err() == nil {
				t.Errorf("Close left the Redis open")
			}
			l.Close() // twice: nothing more
		})
	}
}
