package targets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/field"
)

// A target file's set-up reaches the Spec; Record and FromRecord give the
// same target back, and refuse a script changed since it was recorded.
func TestRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("limiter.lua", "return 1")
	write("set.lua", "redis.call('HSET', KEYS[2], 'limit', ARGV[1])")
	write("ratelab.yaml", "script: limiter.lua\nsetup: set.lua\nkeys: ['{key}', '{key}:cfg']\nargs: ['{limit}']\nallowed: reply != nil\n")
	spec, err := ReadFile(filepath.Join(dir, "ratelab.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.SetupSource == "" || spec.Setup != filepath.Join(dir, "set.lua") {
		t.Fatalf("setup %q %q: want set.lua's", spec.Setup, spec.SetupSource)
	}
	rec := spec.Record()
	if rec.ScriptSHA1 != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" || rec.SetupSHA1 == "" || rec.Allowed != "reply != nil" {
		t.Errorf("record %+v", rec) // SHA-1 of "return 1", as SCRIPT LOAD names it
	}
	back, err := FromRecord(rec, "")
	if err != nil {
		t.Fatal(err)
	}
	if back.Source != spec.Source || back.SetupSource != spec.SetupSource || strings.Join(back.Keys, " ") != "{key} {key}:cfg" || back.AllowedExpr != "reply != nil" {
		t.Errorf("back %+v, want %+v", back, spec)
	}
	write("set.lua", "-- edited")
	_, err = FromRecord(rec, "")
	if name, _ := field.Name(err); name != "setup" || !strings.Contains(err.Error(), "has changed") {
		t.Errorf("changed set-up: %v", err)
	}
	if _, err := ParseFile([]byte("algorithm: gcra\nsetup: set.lua\n"), filepath.Join(dir, "x.yaml")); err == nil || !strings.Contains(err.Error(), "setup: goes with script") {
		t.Errorf("setup without a script: %v", err)
	}
}
