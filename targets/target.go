package targets

import (
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/limit"
)

// Target is a limiter that is not a registered algorithm (KnownAlgorithms), such as a
// user's script (custom.NewScript): Name labels its rows (e.g. the
// script's file name); New builds it on a Redis for one limit (each
// scenario's). Used by run, capacity and bench alike; Spec.Target makes one.
type Target struct {
	Name string
	New  algorithms.Constructor
	// SHA256 is the hex SHA-256 of the user's script the target runs
	// (recorded in the results' Header); empty when there is none.
	SHA256 string
}

// Digests is the SHA256 of every target that has one, in order, joined by
// ","; empty when none (measure.Repro.TargetSHA256).
func Digests(ts []Target) string {
	var ds []string
	for _, t := range ts {
		if t.SHA256 != "" {
			ds = append(ds, t.SHA256)
		}
	}
	return strings.Join(ds, ",")
}

// Check returns an error naming field "targets" when a target has no name
// or constructor, or its name is a registered algorithm's or another
// target's.
func Check(ts []Target) error {
	seen := map[string]bool{}
	for _, t := range ts {
		switch {
		case t.Name == "" || t.New == nil:
			return field.Errorf("targets", "a target needs a name and a constructor")
		case slices.Contains(KnownAlgorithms(), t.Name):
			return field.Errorf("targets", "%q is a built-in algorithm's name", t.Name)
		case seen[t.Name]:
			return field.Errorf("targets", "two targets are named %q (name them apart)", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// NewLimiter builds the limiter named name for l on rdb: the target of that
// name among ts, else the registered algorithm (NewAlgorithm).
func NewLimiter(name string, ts []Target, rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
	for _, t := range ts {
		if t.Name == name {
			return t.New(rdb, l)
		}
	}
	return NewAlgorithm(name, rdb, l)
}

// Names returns the targets' names, in order.
func Names(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// AtomicOnly refuses client-side targets and function libraries in
// command (capacity, bench),
// which measure one atomic script call per decision, pipelined: all
// scripts run client-side (clientSide, the caller's switch: a
// *field.Error naming "client_side"), a spec that does (a *SpecError
// whose Err names "client_side"), a function target (a *SpecError whose
// Err names "function"), an exec adapter (naming "exec"), or a
// client-side built-in among algs (a *field.Error naming "algorithms").
func AtomicOnly(command string, specs []Spec, clientSide bool, algs []string) error {
	reason := command + " measures atomic scripts only (one EVALSHA per decision, pipelined); a client-side limiter makes several round trips per decision, one at a time (ratelab run and verify take it)"
	if clientSide {
		return field.Errorf("client_side", "%s", reason)
	}
	for _, s := range specs {
		if s.ClientSide {
			return &SpecError{Spec: s, Err: field.Errorf("client_side", "%s", reason)}
		}
		if s.FCall != "" {
			return &SpecError{Spec: s, Err: field.Errorf("function", "%s measures EVALSHA scripts only; a function library (FCALL) is taken by ratelab run and verify", command)}
		}
		if s.Exec != "" {
			return &SpecError{Spec: s, Err: field.Errorf("exec", "%s", strings.Replace(reason, "a client-side limiter", "an exec adapter", 1))}
		}
	}
	for _, a := range algs {
		if slices.Contains(ClientSideAlgorithms(), a) {
			return field.Errorf("algorithms", "%s runs client-side: %s", a, reason)
		}
	}
	return nil
}
