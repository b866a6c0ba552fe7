package input

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every kind of path an input flag may be given: read, or refused at once
// with an error naming the path and what it is.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(regular, []byte("name: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.lua")
	if err := os.WriteFile(big, make([]byte, 2049), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		max        int64
		want       string // "" reads; else the error holds it
		is         error
	}{
		{"a regular file", regular, 100, "", nil},
		{"a symlink to one", link, 100, "", nil},
		{"exactly at the bound", big, 2049, "", nil},
		{"one byte past the bound", big, 2048, "big.lua: larger than the bound: 2049 bytes, at most 2 KiB", ErrTooLarge},
		{"/dev/zero (endless)", "/dev/zero", 0, "/dev/zero: a character device, not a regular file", ErrNotRegular},
		{"a FIFO nobody writes to", fifo, 0, "fifo: a FIFO (named pipe), not a regular file", ErrNotRegular},
		{"a directory", dir, 0, "a directory, not a regular file", ErrNotRegular},
		{"a missing file", filepath.Join(dir, "none"), 0, "no such file", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadFile(tc.path, tc.max); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second): // a hang is the failure this guards against, not a timing
				t.Fatalf("ReadFile(%s) still blocked after 5s", tc.path)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want the file read", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error holding %q", err, tc.want)
			case tc.is != nil && !errors.Is(err, tc.is):
				t.Errorf("got %v, not wrapping %v", err, tc.is)
			}
		})
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 4 << 20: "4 MiB", 3 << 29: "1.5 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
