package scenarios

import (
	"os"

	fielderr "github.com/ratelab/ratelab/field"
)

// OpenTraffic opens the traffic file path for reading and returns it with
// its size in bytes (as stored: before any gzip decompression), so that a
// missing, unreadable, directory or empty file is refused before anything
// else is done. The caller closes the file. Errors are *field.Error naming
// "traffic"; an empty file's wraps ErrEmptyTraffic.
func OpenTraffic(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fielderr.Errorf("traffic", "%w", err)
	}
	st, err := f.Stat()
	switch {
	case err != nil || st.IsDir():
		_ = f.Close() // read only, and refused: nothing to flush
		return nil, 0, fielderr.Errorf("traffic", "%s: not a readable file", path)
	case st.Size() == 0:
		_ = f.Close() // read only, and refused: nothing to flush
		return nil, 0, fielderr.Errorf("traffic", "%s: %w", path, ErrEmptyTraffic)
	}
	return f, st.Size(), nil
}
