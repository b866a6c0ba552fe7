package targets

import (
	"fmt"
	"io"
	"os"

	"github.com/ratelab/ratelab/internal/input"
	"github.com/ratelab/ratelab/internal/redact"
	"go.yaml.in/yaml/v3"
)

// DefaultFile is the target file a command looks for in the working
// directory when it is given no target (verify in CI: `ratelab verify`).
const DefaultFile = "ratelab.yaml"

// LoadDefault is Load for a command given no target (g names none): when
// DefaultFile is in the working directory, g.Files is that file and
// progress is told so first ("ratelab: verifying ratelab.yaml (found in the
// working directory)"); otherwise Load's error (ErrTargetCount) is
// returned saying that such a file would do. Errors are Load's.
func LoadDefault(g Given, progress io.Writer) ([]Spec, error) {
	if _, err := os.Stat(DefaultFile); err != nil {
		specs, err := Load(g)
		if err != nil {
			return nil, fmt.Errorf("%w; or put a %s in the working directory", err, DefaultFile)
		}
		return specs, nil
	}
	fmt.Fprintf(progress, "ratelab: verifying %s (found in the working directory)\n", DefaultFile)
	g.Files = []string{DefaultFile}
	return Load(g)
}

// ReadTargets reads a target file that holds one target (ParseFile's form)
// or several: a suite, a mapping whose only field is "targets", a list of
// targets each in ParseFile's form with its own limits. Path "-" reads
// standard input (script paths are then relative to the working
// directory). Errors name the file, the field ("targets[2].script") and
// its line.
func ReadTargets(path string) ([]Spec, error) {
	var data []byte
	var err error
	if path == "-" {
		// bounded as a file is: a stream that never ends is refused
		data, err = io.ReadAll(io.LimitReader(os.Stdin, input.MaxText+1))
		if err == nil && int64(len(data)) > input.MaxText {
			err = fmt.Errorf("stdin: %w (%s)", input.ErrTooLarge, input.Bytes(input.MaxText))
		}
	} else {
		data, err = input.ReadFile(path, input.MaxText)
	}
	if err != nil {
		return nil, err
	}
	return ParseTargets(data, path)
}

// ParseTargets parses data, the text of the target file path (ReadTargets).
func ParseTargets(data []byte, path string) ([]Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a target (a mapping of its fields) or a suite (targets: a list of them)", path)
	}
	top := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "targets" {
			list = top.Content[i+1]
			if len(top.Content) != 2 {
				return nil, fmt.Errorf("%s: targets: a suite has no other field; give each target its own (line %d)", path, top.Content[i].Line)
			}
		}
	}
	if list == nil {
		s, err := parseSpec(top, path, path)
		if err != nil {
			return nil, err
		}
		return []Spec{s}, nil
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil, fmt.Errorf("%s: targets: must be a non-empty list of targets (line %d)", path, list.Line)
	}
	var out []Spec
	names := map[string]int{}
	for i, n := range list.Content {
		at := fmt.Sprintf("%s: targets[%d]", path, i+1)
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: must be a target, a mapping of its fields (line %d)", at, n.Line)
		}
		s, err := parseSpec(n, path, at)
		if err != nil {
			return nil, err
		}
		if s.Name == "" {
			s.Name = s.Algorithm
			if s.Name == "" {
				s.Name = redact.URL(s.HTTP)
			}
		}
		if j, dup := names[s.Name]; dup {
			return nil, fmt.Errorf("%s: name: %q is also targets[%d]'s: give each target its own name (line %d)", at, s.Name, j, n.Line)
		}
		names[s.Name] = i + 1
		out = append(out, s)
	}
	return out, nil
}
