// Package input reads the files a user hands ratelab (target files, Lua
// scripts, scenario files, traffic files, CA files, results to re-render)
// so that no input can hang or exhaust a command: only a regular file is
// read (a FIFO, a device such as /dev/zero, a socket or a directory is
// refused before a byte is read, and opening never waits for a FIFO's
// writer), and what is read whole is bounded in size.
package input

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Bounds of ReadFile's max, in bytes, by kind of input.
const (
	// MaxText bounds a hand-written text input read whole: a target file
	// (ratelab.yaml), a Lua script, a scenario file, a PEM CA file.
	MaxText int64 = 4 << 20
	// MaxResults bounds a results.json or verify.json read whole by
	// `ratelab report`.
	MaxResults int64 = 512 << 20
)

// ErrNotRegular is in the chain of the error for a path that is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is in the chain of the error for a file past its bound.
var ErrTooLarge = errors.New("larger than the bound")

// Open opens path for reading when it is a regular file (symlinks are
// followed to one) and returns it with its information. The open does
// not block (a FIFO without a writer is refused at once); anything but a
// regular file is an error naming path and what it is, wrapping
// ErrNotRegular. The caller closes the file. Safe for concurrent use.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // read only: nothing to flush; the Stat error is the one said
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close() // read only, and refused
		return nil, nil, fmt.Errorf("%s: %s, %w: give a file", path, Kind(st.Mode()), ErrNotRegular)
	}
	return f, st, nil
}

// ReadFile reads the regular file path whole (Open), refusing one larger
// than max bytes with an error naming path, its size and the bound
// (wrapping ErrTooLarge); max <= 0 means MaxText. A file that grows while
// read is refused the same way: at most max+1 bytes are ever read.
func ReadFile(path string, max int64) ([]byte, error) {
	return ReadFileChecked(path, max, nil)
}

func tooLarge(path string, size, max int64) error {
	return fmt.Errorf("%s: %w: %d bytes, at most %s", path, ErrTooLarge, size, Bytes(max))
}

// Kind names what a file mode is, in words: "a directory", "a FIFO
// (named pipe)", "a character device", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// Bytes formats n bytes for a message: "512 B", "4 MiB", "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n), []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for f >= unit && i < len(suffix)-1 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.3g %s", f, suffix[i])
}
