package input

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadFileChecked hands check a stream of the file: a refusal comes back
// naming the file, with nothing more read; a pass gives the whole file,
// read again from its start; the size bound holds as in ReadFile.
func TestReadFileChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	content := strings.Repeat("x", 100_000)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	peek := func(r io.Reader) error {
		_, err := io.ReadFull(r, make([]byte, 10))
		if err != nil {
			return err
		}
		return refused
	}
	if _, err := ReadFileChecked(path, MaxResults, peek); !errors.Is(err, refused) || !strings.Contains(err.Error(), path) {
		t.Errorf("refused: got %v, want the check's error naming %s", err, path)
	}
	data, err := ReadFileChecked(path, MaxResults, func(r io.Reader) error {
		_, err := io.CopyN(io.Discard, r, 5_000) // read part of it
		return err
	})
	if err != nil || string(data) != content {
		t.Errorf("passed: got %d bytes, %v; want the whole file", len(data), err)
	}
	if _, err := ReadFileChecked(path, 1000, func(io.Reader) error { return nil }); !errors.Is(err, ErrTooLarge) {
		t.Errorf("bound: got %v, want ErrTooLarge", err)
	}
}
