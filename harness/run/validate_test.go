package run

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/scenarios"
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
		{"timeout set to 0", Config{Set: Given{Timeout: true}}, "timeout"},
		{"all set", Config{Limit: limit.Limit{Count: 10, Window: time.Second}, Cost: 1,
			Set: Given{true, true, true, false}}, ""},
	} {
		err := c.cfg.Validate()
		if name, _ := field.Name(err); name != c.field || (c.field == "") != (err == nil) {
			t.Errorf("%s: got %v, want an error on field %q", c.name, err, c.field)
		}
	}
}

// What a replay refuses of a run names the field.
func TestReplay(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Second}
	for _, c := range []struct {
		name     string
		cfg      Config
		pipeline int
		field    string // "" for no error
	}{
		{"good", Config{Limit: l}, 1, ""},
		{"with scenarios", Config{Limit: l, Scenarios: []string{"steady"}}, 1, "traffic"},
		{"real clock", Config{Limit: l, Clock: harness.RedisClock}, 1, "clock"},
		{"pipeline 0", Config{Limit: l}, 0, "pipeline"},
		{"no limit", Config{Limit: limit.Limit{Window: time.Second}}, 1, "limit"},
		{"no window", Config{Limit: limit.Limit{Count: 5}}, 1, "window"},
		{"replay's own rule", Config{Limit: l, Cost: 6}, 1, "cost"},
	} {
		rc, err := c.cfg.Replay("t.csv", c.pipeline, scenarios.TrafficOptions{})
		if name, _ := field.Name(err); name != c.field || (c.field == "") != (err == nil) {
			t.Errorf("%s: got %v, want an error on field %q", c.name, err, c.field)
		}
		if err == nil && (rc.Source != "t.csv" || rc.Limit != l) {
			t.Errorf("%s: got %+v", c.name, rc)
		}
	}
}

// OpenReplay opens the traffic file of a good Config only, its size in
// the Config; a file that is missing or empty names the field traffic.
func TestOpenReplay(t *testing.T) {
	l := limit.Limit{Count: 5, Window: time.Second}
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "t.csv"), filepath.Join(dir, "empty.csv")
	for path, text := range map[string]string{good: "timestamp,key\n0,a\n", empty: ""} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		cfg    Config
		source string
		field  string // "" for no error
		size   int64  // the Config's Size when opened
	}{
		// opened, its size said
		{"good", Config{Limit: l}, good, "", 18},
		// a bad Config: the file is not opened
		{"bad config", Config{Limit: l, Clock: harness.RedisClock}, good, "clock", 0},
		// no such file
		{"missing", Config{Limit: l}, filepath.Join(dir, "none.csv"), "traffic", 0},
		// an empty file
		{"empty", Config{Limit: l}, empty, "traffic", 0},
	} {
		rc, file, err := c.cfg.OpenReplay(c.source, 1, scenarios.TrafficOptions{})
		if name, _ := field.Name(err); name != c.field || (c.field == "") != (err == nil) {
			t.Errorf("%s: got %v, want an error on field %q", c.name, err, c.field)
		}
		if (file != nil) != (err == nil) {
			t.Errorf("%s: file %v with error %v", c.name, file, err)
		}
		if file != nil {
			_ = file.Close() // read only
			if rc.Size != c.size || rc.Source != c.source {
				t.Errorf("%s: Size %d, Source %q; want %d, %q", c.name, rc.Size, rc.Source, c.size, c.source)
			}
		}
	}
}
