package verify

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
)

// With NoDefaults a zero Timeout, MaxOutage or Clients is refused, naming
// the field; without it zero is the default.
func TestValidateNoDefaults(t *testing.T) {
	t.Parallel()
	ok := Config{Limits: []limit.Limit{{Count: 10, Window: time.Second}}, Timeout: time.Second, MaxOutage: time.Second, Clients: 1, NoDefaults: true}
	for _, c := range []struct {
		name  string
		edit  func(*Config)
		field string // "" for no error
	}{
		{"all given", func(*Config) {}, ""},
		{"zeros as defaults", func(c *Config) { *c = Config{Limits: c.Limits} }, ""},
		{"timeout 0", func(c *Config) { c.Timeout = 0 }, "timeout"},
		{"max_outage 0", func(c *Config) { c.MaxOutage = 0 }, "max_outage"},
		{"clients 0", func(c *Config) { c.Clients = 0 }, "clients"},
	} {
		cfg := ok
		c.edit(&cfg)
		err := cfg.Validate()
		if name, _ := field.Name(err); name != c.field || (c.field == "") != (err == nil) {
			t.Errorf("%s: got %v, want an error on field %q", c.name, err, c.field)
		}
	}
}
