package scenarios

import (
	"os"

	fielderr "github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/internal/input"
)

// OpenTraffic opens the traffic file path for reading and returns it with
// its size in bytes (as stored: before any gzip decompression), so that a
// missing, unreadable or empty file, or one that is not a regular file
// (input.Open: a FIFO, a device, a directory), is refused before anything
// else is done. The caller closes the file. Errors are *field.Error naming
// "traffic"; an empty file's wraps ErrEmptyTraffic.
func OpenTraffic(path string) (*os.File, int64, error) {
	f, st, err := input.Open(path) // a FIFO, a device (/dev/zero) or a directory is refused at once
	if err != nil {
		return nil, 0, fielderr.Errorf("traffic", "%w", err)
	}
	switch {
	case st.Size() == 0:
		_ = f.Close() // read only, and refused: nothing to flush
		return nil, 0, fielderr.Errorf("traffic", "%s: %w", path, ErrEmptyTraffic)
	}
	return f, st.Size(), nil
}
