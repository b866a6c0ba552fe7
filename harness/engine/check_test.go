package engine

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
)

// TestOptionsCheck: each mistake of a user's options names its field.
func TestOptionsCheck(t *testing.T) {
	for _, c := range []struct {
		spec  string
		o     Options
		field string // "" when the options are good
	}{
		{"auto", Options{Timeout: time.Second}, ""},
		{"container", Options{Timeout: time.Second, Image: "redis:7"}, ""},
		{"exec", Options{}, "connect_timeout"},                                       // zero given by a user
		{"exec", Options{Timeout: time.Second, Image: "redis:7"}, "redis_image"},     // no container
		{"redis://x:1", Options{Timeout: time.Second, CAFile: "ca.pem"}, "redis_ca"}, // no TLS
		{"rediss://x:1", Options{Timeout: time.Second, CAFile: "/nonexistent/ca.pem"}, "redis_ca"},
	} {
		_, err := c.o.Check(c.spec)
		if name, _ := field.Name(err); name != c.field {
			t.Errorf("%s %+v: got field %q (%v), want %q", c.spec, c.o, name, err, c.field)
		}
	}
}
