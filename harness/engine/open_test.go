package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/engine"
	"github.com/ratelab/ratelab/harness/localredis/redistest"
)

// OpenChecked checks the options before it opens anything, names the Redis
// it could not open (its password hidden), and carries AllowEviction.
func TestOpenChecked(t *testing.T) {
	srv := redistest.Start()
	defer func() { _ = srv.Close() }() // the test's own server
	url := "redis://" + srv.Info.Addr
	closed := "redis://user:secret@127.0.0.1:1" // nothing listens on port 1
	for _, tc := range []struct {
		name  string
		spec  string
		o     engine.Options
		field string // Check's field; "" for none
		open  bool   // an *OpenError
	}{
		// the user's server, eviction allowed
		{"URL", url, engine.Options{Timeout: time.Second, AllowEviction: true}, "", false},
		// read-only: nothing written, opened all the same
		{"read-only", url, engine.Options{Timeout: time.Second, ReadOnly: true}, "", false},
		// a zero timeout is a user's mistake, found before any dial
		{"zero timeout", closed, engine.Options{}, "connect_timeout", false},
		// an image for a URL
		{"image for a URL", url, engine.Options{Timeout: time.Second, Image: "redis:7"}, "redis_image", false},
		// nothing listens: the spec named, the password hidden
		{"unreachable", closed, engine.Options{Timeout: time.Second}, "", true},
		// read-only takes URLs only
		{"read-only exec", "exec", engine.Options{Timeout: time.Second, ReadOnly: true}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := engine.OpenChecked(context.Background(), tc.spec, tc.o)
			var oe *engine.OpenError
			name, _ := field.Name(err)
			switch {
			case name != tc.field:
				t.Fatalf("got %v (field %q), want field %q", err, name, tc.field)
			case tc.open && (!errors.As(err, &oe) || oe.Spec != tc.spec):
				t.Fatalf("got %v, want an *OpenError for %s", err, tc.spec)
			case tc.open && strings.Contains(err.Error(), "secret"):
				t.Errorf("%q shows the password", err)
			case err == nil:
				defer func() { _ = rd.Close() }() // a connection of the test's
				if rd.AllowEviction != tc.o.AllowEviction {
					t.Errorf("AllowEviction: got %v, want %v", rd.AllowEviction, tc.o.AllowEviction)
				}
				if err := rd.Client.Ping(context.Background()).Err(); err != nil {
					t.Errorf("ping: %v", err)
				}
			case tc.field == "" && !tc.open:
				t.Errorf("got %v, want no error", err)
			}
		})
	}
}
