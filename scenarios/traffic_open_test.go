package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	fielderr "github.com/ratelab/ratelab/field"
)

func TestOpenTraffic(t *testing.T) {
	dir := t.TempDir()
	full, empty := filepath.Join(dir, "t.csv"), filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(full, []byte("timestamp,key\n1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, size, err := OpenTraffic(full)
	if err != nil || size != 18 {
		t.Fatalf("OpenTraffic(%s) = %d, %v", full, size, err)
	}
	_ = f.Close() // read only
	for _, path := range []string{filepath.Join(dir, "missing.csv"), dir, empty} {
		_, _, err := OpenTraffic(path)
		if name, _ := fielderr.Name(err); name != "traffic" {
			t.Errorf("%s: error %v, want one naming traffic", path, err)
		}
	}
	if _, _, err := OpenTraffic(empty); !errors.Is(err, ErrEmptyTraffic) {
		t.Errorf("empty file: %v, want ErrEmptyTraffic", err)
	}
}
