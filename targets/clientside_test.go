package targets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/targets"
)

// TestClientSideSpec: client_side in a target file and Given.ClientSide
// build a client-side limiter from a script, and are refused elsewhere.
func TestClientSideSpec(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "limiter.lua"), []byte("return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, yaml string
		want       string // error text; "" builds a ClientSide
	}{
		{"script", "script: limiter.lua\nclient_side: true\n", ""},
		{"not a bool", "script: limiter.lua\nclient_side: yes please\n", "client_side: must be true or false"},
		{"with an algorithm", "algorithm: sliding-log\nclient_side: true\n", "client_side: goes with script"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := targets.ParseFile([]byte(c.yaml), filepath.Join(dir, "ratelab.yaml"))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want an error with %q", err, c.want)
				}
				return
			}
			if err != nil || !s.ClientSide {
				t.Fatalf("got %+v, %v; want ClientSide", s, err)
			}
			lim, err := s.Build(nil, limit.Limit{Count: 1, Window: limit.MinWindow})
			if _, ok := lim.(*custom.ClientSide); err != nil || !ok {
				t.Fatalf("built %T, %v; want *custom.ClientSide", lim, err)
			}
		})
	}
	err := targets.Given{Algorithm: "sliding-log", ClientSide: true}.Validate()
	if name, _ := field.Name(err); name != "client_side" || !errors.As(err, new(*field.Error)) {
		t.Errorf("--client-side with an algorithm: %v, want a client_side field error", err)
	}
}

// AtomicOnly names what made a target client-side: the caller's switch,
// a target file's spec, or a built-in.
func TestAtomicOnly(t *testing.T) {
	file := targets.Spec{From: "ratelab.yaml", Script: "l.lua", ClientSide: true}
	for _, tc := range []struct {
		name       string
		specs      []targets.Spec
		clientSide bool
		algs       []string
		want       string // the field named; "" no error
		spec       bool   // a *SpecError
	}{
		{"atomic", []targets.Spec{{Script: "l.lua"}}, false, []string{"fixed-window"}, "", false},
		{"the switch", nil, true, nil, "client_side", false},
		{"a target file", []targets.Spec{file}, false, nil, "client_side", true},
		{"a built-in", nil, false, append([]string{"fixed-window"}, targets.ClientSideAlgorithms()...), "algorithms", false},
	} {
		err := targets.AtomicOnly("bench", tc.specs, tc.clientSide, tc.algs)
		name, _ := field.Name(err)
		if name != tc.want || errors.As(err, new(*targets.SpecError)) != tc.spec || (err != nil) != (tc.want != "") {
			t.Errorf("%s: got %v (field %q)", tc.name, err, name)
		}
	}
}
