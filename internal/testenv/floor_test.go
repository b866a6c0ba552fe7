package testenv

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The packages under internal/ are the ground floor: every other package
// may import them, so none of their code may import a package of the
// project outside internal/ (an arrow back up).
func TestInternalIsGroundFloor(t *testing.T) {
	const mod = "github.com/ratelab/ratelab/"
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, mod) && !strings.HasPrefix(p, mod+"internal/") {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("internal/%s imports %s: internal/ must import nothing of the project above it", filepath.ToSlash(rel), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go file found under internal/")
	}
}
