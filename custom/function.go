package custom

import (
	"strings"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/vclock"
)

// A function target (ScriptConfig.FCall) is a function of a library for
// FUNCTION LOAD ("#!lua name=..."), called by FCALL. It runs from up to
// three libraries loaded beside each other, each a rewrite of the user's
// (FunctionLibraries): as written (Redis's TIME: algorithms.RedisTime), on
// the virtual clock's TIME when the library reads TIME (an injected
// Clock), and in the key-expiry form (algorithms.ExpiryCall). Each is
// loaded under a name of the caller's namespace and its functions under
// that name too, so nothing of the user's own libraries is replaced:
// function names are global across a server's libraries.

// FunctionLibraries returns the libraries a function target of library
// src loads, named under namespace ns (letters, digits and _, e.g.
// "ratelab_<run id>_1"): ns_w as written, ns_t on the virtual clock's TIME
// (only when the library calls TIME), ns_x in the key-expiry form; each
// library's functions are prefixed with its name and "_". The caller
// loads them (FUNCTION LOAD) before the target's first call and deletes
// them (FUNCTION DELETE) after its last. Errors: the library cannot be
// read or rewritten (vclock.ErrNotLibrary, a lexing error, a bad ns).
func FunctionLibraries(src, ns string) ([]vclock.Library, error) {
	w, err := vclock.RenameLibrary(src, ns+"_w", ns+"_w_")
	if err != nil {
		return nil, err
	}
	out := []vclock.Library{w}
	t, err := vclock.RewriteLibrary(src, vclock.Options{Time: true, Library: ns + "_t", FunctionPrefix: ns + "_t_"})
	if err != nil {
		return nil, err
	}
	if t.TimeCalls > 0 {
		out = append(out, t)
	}
	x, err := vclock.RewriteLibrary(src, vclock.Options{Time: t.TimeCalls > 0, Expiry: vclock.ExpiryLean, Library: ns + "_x", FunctionPrefix: ns + "_x_"})
	if err != nil {
		return nil, err
	}
	return append(out, x), nil
}

// functionTarget is what a ScriptLimiter of a function calls: fn as
// written, vtFn on virtual TIME ("" when the library reads no TIME), and
// the key-expiry forms of each.
type functionTarget struct {
	fn, vtFn string
}

// newFunction sets s up to call function c.FCall of the library c.Source
// from the libraries of namespace c.Namespace (FunctionLibraries). Errors
// name the field "fcall" (a function the library does not register by a
// literal name) or "function" (a library that cannot be read).
func (s *ScriptLimiter) newFunction(c ScriptConfig) error {
	libs, err := FunctionLibraries(c.Source, c.Namespace)
	if err != nil {
		return field.Errorf("function", "%w", err)
	}
	found := false
	for _, f := range libs[0].Functions {
		found = found || f == c.FCall
	}
	if !found {
		return field.Errorf("fcall", "the library does not register %q (it registers %s)", c.FCall, strings.Join(libs[0].Functions, ", "))
	}
	x := libs[len(libs)-1]
	s.fn = &functionTarget{fn: libs[0].Function(c.FCall)}
	if len(libs) == 3 {
		t := libs[1]
		s.fn.vtFn = t.Function(c.FCall)
		s.vt = &t.Script
		s.vtScript = algorithms.LuaScript{Expiry: algorithms.FunctionExpiry(x.Function(c.FCall))}
		s.expiries = t.AbsoluteExpiries
		// as written, it reads Redis's TIME: no key-expiry form (that
		// form is for injected clocks)
		s.script = algorithms.LuaScript{}
		return nil
	}
	s.expiries = x.AbsoluteExpiries
	s.script = algorithms.LuaScript{Expiry: algorithms.FunctionExpiry(x.Function(c.FCall))}
	return nil
}
