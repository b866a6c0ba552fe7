package capacity_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/capacity"
	"github.com/ratelab/ratelab/limit"
)

// Validate names the bad field and says why; every size has a bound, so
// nothing reaches an allocation or a script that would not end (limits
// of 1e18 must not panic in makeslice).
func TestValidate(t *testing.T) {
	ok := capacity.Config{}.WithDefaults()
	// at sets the window and precision of every limit (a new slice: ok's stays)
	at := func(c *capacity.Config, w, p time.Duration) {
		counts := make([]int64, len(c.Limits))
		for i, l := range c.Limits {
			counts[i] = l.Count
		}
		c.Limits = capacity.Limits(counts, w, p)
	}
	hour := func(counts ...int64) []limit.Limit { return capacity.Limits(counts, capacity.DefaultWindow, 0) }
	with := func(f func(*capacity.Config)) capacity.Config {
		c := ok
		f(&c)
		return c
	}
	cases := []struct {
		name  string
		cfg   capacity.Config
		field string // "" when valid
		want  string // in the error
	}{
		{"defaults", ok, "", ""},
		{"limit 2^53 on a counter", with(func(c *capacity.Config) {
			c.Algorithms, c.Limits = []string{"fixed-window", "gcra"}, hour(capacity.MaxLimit)
		}), "", ""},
		{"one year window, 1h blocks", with(func(c *capacity.Config) { at(c, capacity.MaxWindow, time.Hour) }), "", ""},
		{"few keys make room", with(func(c *capacity.Config) {
			c.Algorithms, c.Limits, c.Keys = []string{"sliding-log"}, hour(50000), 2
		}), "", ""},
		{"unknown algorithm", with(func(c *capacity.Config) { c.Algorithms = []string{"leaky"} }), "algorithms", `unknown algorithm "leaky"`},
		{"no limits", with(func(c *capacity.Config) { c.Limits = nil }), "limits", "give at least one limit"},
		{"two windows", with(func(c *capacity.Config) {
			c.Limits = append(hour(10), limit.Limit{Count: 10, Window: 2 * time.Hour})
		}), "limits", "every limit must have the window and precision of the first"},
		{"limit zero", with(func(c *capacity.Config) { c.Limits = hour(10, 0) }), "limits", "every limit must be >= 1, got 0"},
		{"limit 1e18", with(func(c *capacity.Config) { c.Limits = hour(1e18) }), "limits", "every limit must be <= 9007199254740992"},
		{"sliding-log over the budget", with(func(c *capacity.Config) { c.Limits = hour(10001) }), "limits",
			"10001: sliding-log makes 10001 script calls per key at limit 10001, x 10 keys at least = 100010 calls, over the budget of 100000"},
		{"bucketed-hash blocks over the budget", with(func(c *capacity.Config) {
			c.Algorithms, c.Limits, c.Budget = []string{"bucketed-hash"}, capacity.Limits([]int64{10}, capacity.DefaultWindow, 360*time.Millisecond), 50000
		}), "precision", "10000 blocks of 360ms per key, x 10 keys at least = 100000, over the budget of 50000"},
		{"too many blocks", with(func(c *capacity.Config) { at(c, capacity.DefaultWindow, time.Millisecond) }), "precision", "at most 10000 blocks per window"},
		{"fine precision without bucketed-hash", with(func(c *capacity.Config) {
			c.Algorithms = []string{"fixed-window"}
			at(c, capacity.DefaultWindow, time.Millisecond)
		}), "", ""},
		{"keys zero", with(func(c *capacity.Config) { c.Keys = 0 }), "keys", "must be >= 1, got 0"},
		{"keys huge", with(func(c *capacity.Config) { c.Keys = 1 << 62 }), "keys", "must be <= 10000000"},
		{"active keys negative", with(func(c *capacity.Config) { c.ActiveKeys = -1 }), "active_keys", "must be >= 1, got -1"},
		{"active keys huge", with(func(c *capacity.Config) { c.ActiveKeys = 1 << 62 }), "active_keys", "must be <= 1000000000000"},
		{"short window", with(func(c *capacity.Config) { at(c, 10*time.Second, 0) }), "window", "must be >= 1m"},
		{"huge window", with(func(c *capacity.Config) { at(c, 1000000*time.Hour, 0) }), "window", "must be <= 365d"},
		{"precision over window", with(func(c *capacity.Config) { at(c, capacity.DefaultWindow, 2*time.Hour) }), "precision", "must be in 0..window"},
		{"precision under 1ms", with(func(c *capacity.Config) { at(c, capacity.DefaultWindow, time.Microsecond) }), "precision", "must be >= 1ms"},
		{"budget zero", with(func(c *capacity.Config) { c.Budget = 0 }), "budget", "must be >= 1, got 0"},
		{"budget huge", with(func(c *capacity.Config) { c.Budget = 1e18 }), "budget", "must be <= 10000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			name, _ := field.Name(err)
			if c.field == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || name != c.field || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v (field %q); want field %q and %q", err, name, c.field, c.want)
			}
		})
	}
}

// Run refuses a bad configuration before it touches Redis: the field error,
// incomplete results, no keys written.
func TestRunInvalid(t *testing.T) {
	res, err := capacity.Run(ctx, srv.Redis, capacity.Config{Limits: capacity.Limits([]int64{1e18}, capacity.DefaultWindow, 0)}, nil)
	if name, _ := field.Name(err); name != "limits" {
		t.Fatalf("err %v, want a limits field error", err)
	}
	if res == nil || res.Complete || res.Error == "" || len(res.Results) != 0 {
		t.Errorf("results %+v", res)
	}
}
