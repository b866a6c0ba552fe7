package targets

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/limit"
	"github.com/ratelab/ratelab/vclock"
)

// Given is how a user names the limiters a command drives, as the command
// line gives them: a built-in Algorithm, Lua Scripts sharing their KEYS
// and ARGV templates and reply predicate, an HTTP endpoint, or target
// Files (ReadTargets). Load turns it into Specs.
type Given struct {
	// Algorithm is a built-in's registry name; "" means none.
	Algorithm string
	// Scripts are paths of Lua files, each a target named by its file
	// name; Keys and Args are their KEYS and ARGV templates
	// (custom.ScriptConfig; no Keys means the one key {key}).
	Scripts    []string
	Keys, Args []string
	// Allowed, when not "", is the Scripts' reply predicate
	// (custom.ParseReplyPredicate); when "", the reply integer (or
	// first element) *AllowedWhen means allowed, and nil means 1 (the
	// usual script's answer).
	Allowed     string
	AllowedWhen *int64
	// HTTP is an endpoint's URL; "" means none.
	HTTP string
	// Exec is an adapter's command (Spec.Exec); "" means none.
	Exec string
	// Files are target files' paths (ratelab.yaml, docs/config.md).
	Files []string
	// Setup, when not "", is the path of a set-up script for the Scripts
	// (Spec.Setup); only with Scripts.
	Setup string
	// BesideBuiltins says the targets are compared beside built-in
	// algorithms (run, capacity, bench): then only scripts are taken, and
	// their names must stand apart (Check). Without it exactly one target
	// is taken (Validate).
	BesideBuiltins bool
	// Several lets a command without BesideBuiltins (verify) take any
	// number of targets when every one comes from Files, a file holding one
	// target or a suite of them (ReadTargets): CI verifies a repository's
	// limiters in one command.
	Several bool
	// ClientSide runs the Scripts, and the target files' scripts,
	// client-side (Spec.ClientSide). Only with Scripts or Files.
	ClientSide bool
	// Function, when not "", is the path of a function library
	// ("#!lua name=..."): a target that calls its function FCall by FCALL,
	// with the Keys, Args and reply predicate of the Scripts. FCall may be
	// "" when the library registers exactly one function.
	Function, FCall string
}

// ErrTargetCount is in the chain of Validate's error when a command that
// takes one target is given none or several.
var ErrTargetCount = errors.New("give exactly one target: an algorithm, a script, a function library, an HTTP endpoint, an exec adapter or a target file")

// Validate checks how g's fields combine, before any file is read: Exec
// with Scripts is an error naming both ("exec"); without BesideBuiltins
// exactly one target among Algorithm, Scripts, HTTP, Exec and Files (an
// error naming no one field, since it is about all five);
// Algorithm a registered name ("algorithm"); Keys, Args, Allowed,
// AllowedWhen and Setup only with Scripts (a target file has its own), the
// error named after the first given ("keys", "args", "allowed",
// "allowed_when", "setup"); Allowed and AllowedWhen not both ("allowed").
func (g Given) Validate() error {
	if g.Exec != "" && len(g.Scripts) > 0 {
		return field.Errorf("exec", "give an adapter's command or a script, not both (the adapter is the limiter; a Lua script is another)")
	}
	if !g.BesideBuiltins {
		n := len(g.Scripts) + len(g.Files)
		for _, s := range []string{g.Algorithm, g.HTTP, g.Function, g.Exec} {
			if s != "" {
				n++
			}
		}
		if g.Several && len(g.Files) > 0 && n == len(g.Files) {
			n = 1 // files only: each may hold a suite
		}
		if n != 1 {
			return fmt.Errorf("%w (got %d)", ErrTargetCount, n)
		}
	}
	if g.Algorithm != "" {
		if err := CheckAlgorithms([]string{g.Algorithm}); err != nil {
			return &field.Error{Name: "algorithm", Err: err}
		}
	}
	if g.FCall != "" && g.Function == "" {
		return field.Errorf("fcall", "goes only with a function library (function)")
	}
	if len(g.Scripts) == 0 && g.Function == "" {
		for _, f := range []struct {
			name  string
			given bool
		}{{"keys", len(g.Keys) > 0}, {"args", len(g.Args) > 0}, {"allowed", g.Allowed != ""}, {"allowed_when", g.AllowedWhen != nil}, {"setup", g.Setup != ""}} {
			if f.given {
				return field.Errorf(f.name, "goes only with a script (a target file has its own keys, args and allowed)")
			}
		}
	}
	if g.Allowed != "" && g.AllowedWhen != nil {
		return field.Errorf("allowed", "give allowed or allowed_when, not both")
	}
	if g.Function != "" && g.Setup != "" {
		return field.Errorf("setup", "goes only with a script, not a function library")
	}
	if g.Function != "" && g.ClientSide {
		return field.Errorf("client_side", "goes only with a script: a function library runs in Redis (FCALL)")
	}
	if g.ClientSide && len(g.Scripts) == 0 && len(g.Files) == 0 {
		return field.Errorf("client_side", "goes only with a script (the built-in client-side algorithm is %s)", strings.Join(ClientSideAlgorithms(), ", "))
	}
	return nil
}

// Load checks g (Validate), reads its scripts and files, parses its predicate, and checks every
// template and predicate by building each script once (for 1 per 1s,
// without Redis), before any Redis is opened. The Specs come in this
// order: Scripts, Files, the Exec adapter, then the Algorithm or HTTP
// endpoint. Errors are
// Validate's, or *field.Error named after g's fields: "allowed" (the predicate),
// "scripts" (a script that cannot be read), "setup" (the set-up script
// that cannot be read), "files" (a file that cannot
// be read, or that is not a script when BesideBuiltins), "targets"
// (Check's, when BesideBuiltins); a spec that does not build is a
// *SpecError.
func Load(g Given) ([]Spec, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	allowed := custom.ReplyIs(1)
	if g.AllowedWhen != nil {
		allowed = custom.ReplyIs(*g.AllowedWhen)
	}
	if g.Allowed != "" {
		p, err := custom.ParseReplyPredicate(g.Allowed)
		if err != nil {
			return nil, &field.Error{Name: "allowed", Err: err}
		}
		allowed = p
	}
	var setup []byte
	if g.Setup != "" {
		var err error
		if setup, err = input.ReadFile(g.Setup, input.MaxText); err != nil {
			return nil, &field.Error{Name: "setup", Err: err}
		}
	}
	var specs []Spec
	for _, path := range g.Scripts {
		b, err := input.ReadFile(path, input.MaxText)
		if err != nil {
			return nil, &field.Error{Name: "scripts", Err: err}
		}
		if err := notLibrary(path, string(b)); err != nil {
			return nil, &field.Error{Name: "scripts", Err: err}
		}
		specs = append(specs, Spec{Name: filepath.Base(path), Script: path, Source: string(b),
			Keys: g.Keys, Args: g.Args, Allowed: allowed, AllowedExpr: g.Allowed, AllowedWhen: g.AllowedWhen,
			Setup: g.Setup, ClientSide: g.ClientSide, SetupSource: string(setup)})
	}
	if g.Function != "" {
		b, err := input.ReadFile(g.Function, input.MaxText)
		if err != nil {
			return nil, &field.Error{Name: "function", Err: err}
		}
		fcall, err := pickFunction(g.Function, string(b), g.FCall)
		if err != nil {
			return nil, err
		}
		specs = append(specs, Spec{Name: filepath.Base(g.Function), Script: g.Function, Source: string(b), FCall: fcall,
			Keys: g.Keys, Args: g.Args, Allowed: allowed, AllowedExpr: g.Allowed, AllowedWhen: g.AllowedWhen})
	}
	for _, path := range g.Files {
		ss, err := ReadTargets(path)
		if err != nil {
			return nil, &field.Error{Name: "files", Err: err}
		}
		if len(ss) > 1 && !g.BesideBuiltins && !g.Several {
			return nil, field.Errorf("files", "%s: holds %d targets; this command takes one", path, len(ss))
		}
		for _, s := range ss {
			if g.BesideBuiltins && s.Script == "" && s.Exec == "" {
				return nil, field.Errorf("files", "%s: only a script or an exec adapter can stand beside the built-ins here (a built-in is named among the algorithms)", path)
			}
			if g.ClientSide && s.Script != "" {
				s.ClientSide = true
			}
			specs = append(specs, s)
		}
	}
	if g.Exec != "" {
		specs = append(specs, Spec{Name: g.Exec, Exec: g.Exec})
	}
	if g.Algorithm != "" || g.HTTP != "" {
		specs = append(specs, Spec{Algorithm: g.Algorithm, HTTP: g.HTTP})
	}
	if g.BesideBuiltins && len(specs) > 0 {
		if err := Check(Targets(specs)); err != nil {
			return nil, err
		}
	}
	for _, s := range specs {
		if s.Script != "" {
			if _, err := s.Build(nil, limit.Limit{Count: 1, Window: time.Second}); err != nil {
				return nil, &SpecError{Spec: s, Err: err}
			}
		}
	}
	return specs, nil
}

// LibraryError is the error of a script that is a function library
// ("#!lua name=..."): it is loaded with FUNCTION LOAD and called with
// FCALL, so it is given as a function target (Given.Function, the target
// file's function), with the function to call. Load wraps it in a field
// error named "scripts", ReadFile in one named "script".
type LibraryError struct {
	// Path is the file, Library the name its first line gives, Functions
	// those it registers by a literal name (vclock.LibraryFunctions).
	Path, Library string
	Functions     []string
}

func (e *LibraryError) Error() string {
	return fmt.Sprintf("%s is a function library (#!lua name=%s) for FUNCTION LOAD and FCALL, not a script for EVAL: give it as a function with the function to call; it registers: %s", e.Path, e.Library, e.List())
}

// List is the functions the library registers, joined by ", ", or a
// phrase saying none was found.
func (e *LibraryError) List() string {
	if len(e.Functions) == 0 {
		return "none found by reading it"
	}
	return strings.Join(e.Functions, ", ")
}

// notLibrary refuses src, the script at path, when it is a function
// library (a *LibraryError).
func notLibrary(path, src string) error {
	if !vclock.IsLibrary(src) {
		return nil
	}
	name, fns, _ := vclock.LibraryFunctions(src)
	return &LibraryError{Path: path, Library: name, Functions: fns}
}

// pickFunction checks that src, the file at path, is a function library
// and returns the function to call: fcall when the library registers it
// by a literal name, or when fcall is "", the library's one function.
// Errors name the field "function" (not a library, or none found) or
// "fcall" (several to choose from, or not registered).
func pickFunction(path, src, fcall string) (string, error) {
	_, fns, err := vclock.LibraryFunctions(src)
	switch {
	case errors.Is(err, vclock.ErrNotLibrary):
		return "", field.Errorf("function", "%s is not a function library (its first line is not #!lua name=...): give a script for EVAL as a script", path)
	case err != nil:
		return "", field.Errorf("function", "%s: %w", path, err)
	case fcall != "" && !slices.Contains(fns, fcall):
		return "", field.Errorf("fcall", "%s registers no function %q (it registers: %s)", path, fcall, strings.Join(fns, ", "))
	case fcall != "":
		return fcall, nil
	case len(fns) == 1:
		return fns[0], nil
	case len(fns) == 0:
		return "", field.Errorf("function", "%s registers no function by a literal name (redis.register_function('name', ...)): name the one to call (fcall)", path)
	}
	return "", field.Errorf("fcall", "%s registers %d functions (%s): name the one to call", path, len(fns), strings.Join(fns, ", "))
}

// SpecError is an error of one Spec (Build's), with the Spec it is about,
// so that the caller can say where the spec came from (Spec.From).
type SpecError struct {
	Spec Spec
	Err  error
}

func (e *SpecError) Error() string {
	if e.Spec.From != "" {
		return fmt.Sprintf("%s: %v", e.Spec.From, e.Err)
	}
	return e.Err.Error()
}

func (e *SpecError) Unwrap() error { return e.Err }

// Digest is the hex SHA-256 of s's script source; "" when s has none (a
// built-in or an HTTP endpoint).
func (s Spec) Digest() string {
	if s.Source == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s.Source))
	return hex.EncodeToString(sum[:])
}

// Target is s as a Target of run, capacity and bench: named s.Name, with
// s.Digest, built by s.Build for each limit. Its New's errors are
// *SpecErrors.
func (s Spec) Target() Target {
	return Target{Name: s.Name, SHA256: s.Digest(), New: func(rdb redis.Scripter, l limit.Limit) (algorithms.Limiter, error) {
		lim, err := s.Build(rdb, l)
		if err != nil {
			return nil, &SpecError{Spec: s, Err: err}
		}
		return lim, nil
	}}
}

// Targets is every spec's Target, in order.
func Targets(specs []Spec) []Target {
	out := make([]Target, len(specs))
	for i, s := range specs {
		out[i] = s.Target()
	}
	return out
}

// HasScript reports whether any of specs is a user's Lua script (its
// Script set), which a shared Redis runs under guard (guard.ForScript).
func HasScript(specs []Spec) bool {
	return slices.ContainsFunc(specs, func(s Spec) bool { return s.Script != "" })
}
