package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// secret is the password of the servers below: ':', '@' and '%' in it,
// and "S3cr" in every form of it (raw, percent-encoded).
const secret = "pw:S3cr@t%x"

// startLocked starts a redis-server whose default user has the password
// secret and an ACL user alice (password secret, every command and key),
// and returns its address and an authenticated client.
func startLocked(t *testing.T) (string, *redis.Client) {
	t.Helper()
	v := startVictim(t)
	if err := v.client(t).ConfigSet(context.Background(), "requirepass", secret).Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: v.addr, Password: secret})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Do(context.Background(), "ACL", "SETUSER", "alice", "on", ">"+secret, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	return v.addr, c
}

// lockedURL is the redis:// URL of addr logging in as user (none: the
// default user) with secret, percent-encoded, and database db.
func lockedURL(addr, user string, db int) string {
	u := url.URL{Scheme: "redis", User: url.UserPassword(user, secret), Host: addr}
	if db != 0 {
		u.Path = "/" + strconv.Itoa(db)
	}
	return u.String()
}

// childCmdlines polls /proc every few milliseconds until stop is closed
// for the processes named name whose parent is the process parent (0:
// any), and returns the command line of each it saw.
func childCmdlines(name string, parent int, stop <-chan struct{}) func() []string {
	var mu sync.Mutex
	seen := map[string]string{}
	done := make(chan struct{})
	ppid := "PPid:\t" + strconv.Itoa(parent) + "\n"
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			dirs, _ := filepath.Glob("/proc/[0-9]*")
			for _, d := range dirs {
				if comm, _ := os.ReadFile(d + "/comm"); strings.TrimSpace(string(comm)) != name {
					continue
				}
				if st, _ := os.ReadFile(d + "/status"); parent != 0 && !bytes.Contains(st, []byte(ppid)) {
					continue
				}
				if cl, err := os.ReadFile(d + "/cmdline"); err == nil && len(cl) > 0 {
					mu.Lock()
					seen[d] = string(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}))
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		<-done
		var out []string
		for _, c := range seen {
			out = append(out, c)
		}
		return out
	}
}

// bench --compare-redis-benchmark on a Redis with a password (the default
// user's alone, an ACL user's, from --redis and from $REDIS_URL): exit 0,
// and redis-benchmark's command line, read while it runs, holds no
// password; the one-time user it logs in as is gone afterwards. A login
// that may not create users is refused, naming the flag.
func TestBenchComparePasswordOffCommandLine(t *testing.T) {
	addr, c := startLocked(t)
	bench := []string{"bench", "--compare-redis-benchmark", "--algorithms", "fixed-window", "--paths", "allow",
		"--rounds", "1", "--requests", "20000", "--clients", "2", "--format", "csv"}
	for _, tc := range []struct {
		name, url string
		env       bool // in $REDIS_URL, not --redis
	}{
		{"password alone", lockedURL(addr, "", 0), false},
		{"ACL user, database 2", lockedURL(addr, "alice", 2), false},
		{"from $REDIS_URL", lockedURL(addr, "default", 0), true},
	} {
		args := append(slices.Clone(bench), "--out", filepath.Join(t.TempDir(), "out"))
		t.Setenv("REDIS_URL", "")
		if tc.env {
			t.Setenv("REDIS_URL", tc.url)
		} else {
			args = append(args, "--redis", tc.url)
		}
		stop := make(chan struct{})
		seen := childCmdlines("redis-benchmark", os.Getpid(), stop)
		code, stdout, stderr := ratelab(t, args...)
		close(stop)
		cmdlines := seen()
		if code != exitOK {
			t.Errorf("%s: exit %d: %s", tc.name, code, stderr)
		}
		if len(cmdlines) == 0 {
			t.Errorf("%s: redis-benchmark was never seen running", tc.name)
		}
		for _, cl := range cmdlines {
			if strings.Contains(cl, "S3cr") || strings.Contains(cl, url.QueryEscape(secret)) {
				t.Errorf("%s: the password on redis-benchmark's command line: %s", tc.name, cl)
			}
		}
		if strings.Contains(stdout+stderr, "S3cr") {
			t.Errorf("%s: the password in the output", tc.name)
		}
		if users, _ := c.Do(context.Background(), "ACL", "USERS").StringSlice(); len(users) != 2 {
			t.Errorf("%s: ACL users left: %v", tc.name, users)
		}
	}

	// a login that may not create ACL users
	if err := c.Do(context.Background(), "ACL", "SETUSER", "bob", "on", ">"+secret, "~*", "&*", "+@all", "-acl").Err(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REDIS_URL", "")
	code, _, stderr := ratelab(t, append(slices.Clone(bench), "--redis", lockedURL(addr, "bob", 0), "--out", filepath.Join(t.TempDir(), "out"))...)
	if code != exitUsage || !strings.Contains(stderr, "--compare-redis-benchmark: redis-benchmark takes a password only on its command line") {
		t.Errorf("a login without ACL SETUSER: exit %d: %s", code, stderr)
	}
}

// Every command, succeeding and failing, on GitHub Actions, with a
// password in the Redis URL (percent-encoded, or with a literal '%' that
// does not parse; from --redis and from $REDIS_URL): the password is
// nowhere in stdout, stderr, the job summary, or any file under --out.
func TestNoPasswordInAnyOutput(t *testing.T) {
	addr, _ := startLocked(t)
	good := lockedURL(addr, "alice", 0)
	bad := "redis://alice:S3cr%zzt@" + addr // a '%' that starts no escape
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.md")
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	t.Setenv("RATELAB_REDIS", "")
	out := func(name string) string { return filepath.Join(dir, "out", name) }
	type step struct {
		name string
		env  string // $REDIS_URL
		args []string
		code int
	}
	var steps []step
	for _, u := range []struct {
		name, url string
		code      int
	}{{"ok", good, exitOK}, {"bad URL", bad, exitUsage}} {
		r := []string{"--redis", u.url}
		steps = append(steps,
			step{"run " + u.name, "", append([]string{"run", "--scenarios", "boundary-burst", "--algorithms", "fixed-window", "--out", out("run-" + u.name)}, r...), u.code},
			step{"verify " + u.name, "", append([]string{"verify", "--algorithm", "sliding-log", "--limit", "10/300ms", "--out", out("verify-" + u.name)}, r...), u.code},
			step{"verify --format json " + u.name, "", append([]string{"verify", "--algorithm", "sliding-log", "--limit", "10/300ms", "--format", "json"}, r...), u.code},
			step{"capacity " + u.name, "", append([]string{"capacity", "--algorithms", "sliding-log", "--limits", "10", "--keys", "200", "--budget", "4000", "--out", out("capacity-" + u.name)}, r...), u.code},
			step{"bench " + u.name, "", append([]string{"bench", "--compare-redis-benchmark", "--algorithms", "fixed-window", "--paths", "allow", "--rounds", "1", "--requests", "3000", "--clients", "2", "--out", out("bench-" + u.name)}, r...), u.code},
			step{"demo " + u.name, "", append([]string{"demo", "--algorithms", "fixed-window", "--window", "1s", "--lead", "100ms", "--out", out("demo-" + u.name)}, r...), u.code},
			step{"clean " + u.name, "", append([]string{"clean", "--yes"}, r...), u.code},
			step{"run from $REDIS_URL " + u.name, u.url, []string{"run", "--scenarios", "boundary-burst", "--algorithms", "fixed-window", "--out", out("env-" + u.name)}, u.code},
		)
	}
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})) // allows everything
	defer endpoint.Close()
	host := strings.TrimPrefix(endpoint.URL, "http://")
	steps = append(steps,
		step{"verify --http violated", "", []string{"verify", "--http", "http://u:" + url.QueryEscape(secret) + "@" + host + "/", "--limit", "5/200ms", "--out", out("http")}, exitFail},
		step{"verify --http bad URL", "", []string{"verify", "--http", "http://u:S3cr%zzt@" + host + "/", "--limit", "5/200ms", "--out", out("http-bad")}, exitUsage},
		step{"verify violated", "", []string{"verify", "--redis", good, "--algorithm", "fixed-window", "--limit", "10/300ms", "--out", out("violated")}, exitFail},
		step{"report ok", "", []string{"report", out("run-ok")}, exitOK},
		step{"report of no results", "", []string{"report", out("run-bad URL")}, exitUsage},
	)
	for _, s := range steps {
		t.Setenv("REDIS_URL", s.env)
		code, stdout, stderr := ratelab(t, s.args...)
		if code != s.code {
			t.Errorf("%s: exit %d, want %d: %s", s.name, code, s.code, stderr)
		}
		if strings.Contains(stdout, "S3cr") || strings.Contains(stderr, "S3cr") {
			t.Errorf("%s: the password in the output:\n%s\n%s", s.name, stdout, stderr)
		}
	}
	files := []string{summary}
	_ = filepath.WalkDir(filepath.Join(dir, "out"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 10 {
		t.Errorf("only %d files written: %v", len(files), files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if i := bytes.Index(b, []byte("S3cr")); i >= 0 {
			t.Errorf("%s holds the password: %q", f, b[max(0, i-80):min(len(b), i+40)])
		}
	}
	fmt.Fprintf(os.Stderr, "%d files and the outputs of %d commands checked\n", len(files), len(steps))
}
