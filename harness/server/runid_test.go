package server_test

import (
	"testing"

	"github.com/ratelab/ratelab/harness/server"
)

func TestIsRunID(t *testing.T) {
	for s, want := range map[string]bool{
		server.NewRunID():      true,
		"20261122T030515-cfab": true,
		"20261122T030515-zzzz": false, // not hex
		"20261122T030515-CFAB": false, // server.NewRunID writes lower case
		"20261399T030515-cfab": false, // no such date
		"20261122T250515-cfab": false,
		"20261122T030515-cfa":  false,
		"20261122T030515cfab0": false,
		"users":                false,
		"session":              false,
		"access-check":         false,
		"":                     false,
	} {
		if got := server.IsRunID(s); got != want {
			t.Errorf("server.IsRunID(%q) = %v, want %v", s, got, want)
		}
	}
}
