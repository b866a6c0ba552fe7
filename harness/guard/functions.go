package guard

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/targets"
)

// Functions are the libraries a command loaded for its function targets
// (targets.Spec.FCall) on one Redis: Name gives each target its namespace
// before it is built, Delete removes them. The nil *Functions has none.
// Safe for concurrent use once loaded (it is never changed but by Delete).
type Functions struct {
	c      redis.UniversalClient
	spaces map[string]string // a library's digest -> its namespace
	loaded []string          // the libraries' names, in load order
}

// loadErrLine finds the line in Redis's error for a library that does not
// load ("... user_function:4: ')' expected ...").
var loadErrLine = regexp.MustCompile(`user_function:(\d+):`)

// LoadFunctions loads, with FUNCTION LOAD on c, the libraries of every
// function target among specs (custom.FunctionLibraries, one namespace per
// distinct library: server.FunctionNamespace(runID, n)), so that their calls find
// them. c must be allowed FUNCTION LOAD: the user's own connection, never
// the guard's. A library that Redis refuses is a *targets.SpecError naming
// the field "function" with the file, the line Redis names and Redis's
// message; the libraries loaded before it are deleted again. Any other
// error (Redis unreachable) is returned as it is, after the same.
// Nothing is loaded, and nil returned, without a function target.
func LoadFunctions(ctx context.Context, c redis.UniversalClient, specs []targets.Spec, runID string) (*Functions, error) {
	f := &Functions{c: c, spaces: map[string]string{}}
	for _, s := range specs {
		if s.FCall == "" || f.spaces[s.Digest()] != "" {
			continue
		}
		ns := server.FunctionNamespace(runID, len(f.spaces)+1)
		libs, err := custom.FunctionLibraries(s.Source, ns)
		if err != nil {
			f.Delete(ctx)
			return nil, &targets.SpecError{Spec: s, Err: field.Errorf("function", "%s: %w", s.Script, err)}
		}
		f.spaces[s.Digest()] = ns
		for _, l := range libs {
			err := c.FunctionLoad(ctx, l.Source).Err()
			if err != nil && server.IsRedisError(err) {
				f.Delete(ctx)
				where := s.Script
				if m := loadErrLine.FindStringSubmatch(err.Error()); m != nil {
					where += ":" + m[1]
				}
				return nil, &targets.SpecError{Spec: s, Err: field.Errorf("function", "%s: the library does not load (FUNCTION LOAD): %w", where, err)}
			}
			if err != nil {
				f.Delete(ctx)
				return nil, fmt.Errorf("FUNCTION LOAD of %s: %w", s.Name, err)
			}
			f.loaded = append(f.loaded, l.Name)
		}
	}
	if len(f.spaces) == 0 {
		return nil, nil
	}
	return f, nil
}

// Name returns spec with the namespace its library was loaded under
// (targets.Spec.Namespace); spec unchanged when it is not a function
// target or f is nil.
func (f *Functions) Name(spec targets.Spec) targets.Spec {
	if f != nil && spec.FCall != "" {
		spec.Namespace = f.spaces[spec.Digest()]
	}
	return spec
}

// Delete removes the libraries f loaded (FUNCTION DELETE of each, by its
// own name only), within ctx, and returns the first error; those it could
// not remove are left to `ratelab clean` (their names start with
// server.FunctionPrefix and the run id).
func (f *Functions) Delete(ctx context.Context) error {
	if f == nil {
		return nil
	}
	var first error
	for _, name := range f.loaded {
		if err := f.c.FunctionDelete(ctx, name).Err(); err != nil && first == nil && !strings.Contains(err.Error(), "not exist") {
			first = fmt.Errorf("FUNCTION DELETE %s: %w", name, err)
		}
	}
	f.loaded = nil
	return first
}
