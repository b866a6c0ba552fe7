package targets

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratelab/ratelab/custom"
	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/limit"
)

// fileFields are the fields of a target file (docs/config.md).
var fileFields = []string{"name", "script", "function", "fcall", "algorithm", "http", "exec", "keys", "args", "allowed", "allowed_when", "setup", "limits", "client_side"}

// ReadFile reads and checks a target file of one target (ParseFile);
// ReadTargets reads one target or a suite.
func ReadFile(path string) (Spec, error) {
	data, err := input.ReadFile(path, input.MaxText)
	if err != nil {
		return Spec{}, err
	}
	return ParseFile(data, path)
}

// ParseFile parses data, the text of the target file path (ratelab.yaml):
// one target, its keys, arguments, reply predicate and limits. A script's
// path is relative to the file. Errors name the file, the field and its
// line. ReadTargets reads a file of one target or a suite of them.
func ParseFile(data []byte, path string) (Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Spec{}, fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return Spec{}, fmt.Errorf("%s: want a mapping of %s", path, strings.Join(fileFields, ", "))
	}
	return parseSpec(doc.Content[0], path, path)
}

// parseSpec reads one target, the mapping top of the file path; errors
// start with label (the path, or "path: targets[2]" in a suite).
func parseSpec(top *yaml.Node, path, label string) (Spec, error) {
	bad := func(name string, line int, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s (line %d)", label, name, fmt.Sprintf(format, args...), line)
	}
	spec := Spec{From: path, Allowed: custom.ReplyIs(1)}
	got := map[string]*yaml.Node{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if !contains(fileFields, k.Value) {
			return spec, bad(k.Value, k.Line, "unknown field (known: %s)", strings.Join(fileFields, ", "))
		}
		if got[k.Value] != nil {
			return spec, bad(k.Value, k.Line, "given twice")
		}
		got[k.Value] = v
	}
	str := func(name string) (string, error) {
		n := got[name]
		if n == nil {
			return "", nil
		}
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return "", bad(name, n.Line, "must be a non-empty string")
		}
		return n.Value, nil
	}
	list := func(name string, parse func(string) error) ([]string, error) {
		n := got[name]
		if n == nil {
			return nil, nil
		}
		if n.Kind != yaml.SequenceNode {
			return nil, bad(name, n.Line, "must be a list of templates")
		}
		var out []string
		for i, e := range n.Content {
			if e.Kind != yaml.ScalarNode {
				return nil, bad(fmt.Sprintf("%s[%d]", name, i+1), e.Line, "must be a template (a string)")
			}
			if err := parse(e.Value); err != nil {
				return nil, bad(fmt.Sprintf("%s[%d]", name, i+1), e.Line, "%v", err)
			}
			out = append(out, e.Value)
		}
		return out, nil
	}
	var err error
	if spec.Name, err = str("name"); err != nil {
		return spec, err
	}
	if spec.Algorithm, err = str("algorithm"); err != nil {
		return spec, err
	}
	if spec.HTTP, err = str("http"); err != nil {
		return spec, err
	}
	if spec.Exec, err = str("exec"); err != nil {
		return spec, err
	}
	script, err := str("script")
	if err != nil {
		return spec, err
	}
	function, err := str("function")
	if err != nil {
		return spec, err
	}
	fcall, err := str("fcall")
	if err != nil {
		return spec, err
	}
	kinds := 0
	for _, s := range []string{spec.Algorithm, spec.HTTP, spec.Exec, script, function} {
		if s != "" {
			kinds++
		}
	}
	if kinds != 1 {
		return spec, bad("script", top.Line, "give exactly one of script, function, algorithm, http or exec")
	}
	if spec.Exec != "" {
		// the command runs where the file is, as a script's path is read
		spec.ExecDir = filepath.Dir(path)
		if spec.Name == "" {
			spec.Name = spec.Exec
		}
	}
	if n := got["fcall"]; n != nil && function == "" {
		return spec, bad("fcall", n.Line, "goes with function")
	}
	if function != "" {
		for _, f := range []string{"setup", "client_side"} {
			if n := got[f]; n != nil {
				return spec, bad(f, n.Line, "goes with script, not function")
			}
		}
		if !filepath.IsAbs(function) {
			function = filepath.Join(filepath.Dir(path), function)
		}
		src, err := input.ReadFile(function, input.MaxText)
		if err != nil {
			return spec, bad("function", got["function"].Line, "%v", err)
		}
		if spec.FCall, err = pickFunction(function, string(src), fcall); err != nil {
			name, _ := field.Name(err)
			line := got["function"].Line
			if n := got["fcall"]; name == "fcall" && n != nil {
				line = n.Line
			}
			return spec, bad(name, line, "%v", errors.Unwrap(err))
		}
		spec.Script, spec.Source = function, string(src)
		if spec.Name == "" {
			spec.Name = filepath.Base(function)
		}
	} else if script == "" {
		for _, f := range []string{"keys", "args", "allowed", "allowed_when", "setup", "client_side"} {
			if n := got[f]; n != nil {
				return spec, bad(f, n.Line, "goes with script")
			}
		}
	} else {
		if !filepath.IsAbs(script) {
			script = filepath.Join(filepath.Dir(path), script)
		}
		src, err := input.ReadFile(script, input.MaxText)
		if err != nil {
			return spec, bad("script", got["script"].Line, "%v", err)
		}
		if err := notLibrary(script, string(src)); err != nil {
			return spec, bad("script", got["script"].Line, "%v", err)
		}
		spec.Script, spec.Source = script, string(src)
		if spec.Name == "" {
			spec.Name = filepath.Base(script)
		}
		setup, err := str("setup")
		if err != nil {
			return spec, err
		}
		if setup != "" {
			if !filepath.IsAbs(setup) {
				setup = filepath.Join(filepath.Dir(path), setup)
			}
			src, err := input.ReadFile(setup, input.MaxText)
			if err != nil {
				return spec, bad("setup", got["setup"].Line, "%v", err)
			}
			spec.Setup, spec.SetupSource = setup, string(src)
		}
	}
	if spec.Keys, err = list("keys", func(s string) error { _, err := custom.ParseKeyTemplate(s); return err }); err != nil {
		return spec, err
	}
	if spec.Args, err = list("args", func(s string) error { _, err := custom.ParseTemplate(s); return err }); err != nil {
		return spec, err
	}
	if n := got["allowed"]; n != nil {
		if got["allowed_when"] != nil {
			return spec, bad("allowed_when", got["allowed_when"].Line, "give allowed or allowed_when, not both")
		}
		if spec.Allowed, err = custom.ParseReplyPredicate(n.Value); err != nil || n.Kind != yaml.ScalarNode {
			return spec, bad("allowed", n.Line, "%v", err)
		}
		spec.AllowedExpr = n.Value
	}
	if n := got["allowed_when"]; n != nil {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || n.Kind != yaml.ScalarNode {
			return spec, bad("allowed_when", n.Line, "must be an integer, got %q", n.Value)
		}
		spec.Allowed, spec.AllowedWhen = custom.ReplyIs(v), &v
	}
	if n := got["client_side"]; n != nil {
		if n.Kind != yaml.ScalarNode || (n.Value != "true" && n.Value != "false") {
			return spec, bad("client_side", n.Line, "must be true or false, got %q", n.Value)
		}
		spec.ClientSide = n.Value == "true"
	}
	if n := got["limits"]; n != nil {
		if spec.Limits, err = parseLimits(n, bad); err != nil {
			return spec, err
		}
	}
	return spec, nil
}

// parseLimits reads a list of {limit: N, window: D}.
func parseLimits(n *yaml.Node, bad func(string, int, string, ...any) error) ([]limit.Limit, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, bad("limits", n.Line, "must be a non-empty list of {limit: N, window: D}")
	}
	var out []limit.Limit
	for i, e := range n.Content {
		name := fmt.Sprintf("limits[%d]", i+1)
		if e.Kind != yaml.MappingNode {
			return nil, bad(name, e.Line, "must be {limit: N, window: D}")
		}
		var l limit.Limit
		for j := 0; j+1 < len(e.Content); j += 2 {
			k, v := e.Content[j], e.Content[j+1]
			switch k.Value {
			case "limit":
				x, err := strconv.ParseInt(v.Value, 10, 64)
				if err != nil || x < 1 {
					return nil, bad(name+".limit", v.Line, "must be an integer >= 1, got %q", v.Value)
				}
				l.Count = x
			case "window":
				d, err := limit.ParseDuration(v.Value)
				if err != nil || d < limit.MinWindow {
					return nil, bad(name+".window", v.Line, "must be a duration >= 1ms such as 10s, got %q", v.Value)
				}
				l.Window = d
			default:
				return nil, bad(name+"."+k.Value, k.Line, "unknown field (known: limit, window)")
			}
		}
		if l.Count == 0 || l.Window == 0 {
			return nil, bad(name, e.Line, "needs both limit and window")
		}
		out = append(out, l)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
