package run

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
)

// A field of Set given as 0 is refused, naming the field; unset, 0 means
// each scenario's own.
func TestValidateSet(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   Config
		field string // "" for no error
	}{
		{"zero unset", Config{}, ""},
		{"count set to 0", Config{Set: Given{Count: true}}, "limit"},
		{"window set to 0", Config{Set: Given{Window: true}}, "window"},
		{"cost set to 0", Config{Set: Given{Cost: true}}, "cost"},
		{"all set", Config{Limit: limit.Limit{Count: 10, Window: time.Second}, Cost: 1,
			Set: Given{true, true, true}}, ""},
	} {
		err := c.cfg.Validate()
		if name, _ := field.Name(err); name != c.field || (c.field == "") != (err == nil) {
			t.Errorf("%s: got %v, want an error on field %q", c.name, err, c.field)
		}
	}
}
