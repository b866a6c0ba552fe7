package input

import (
	"bufio"
	"fmt"
	"io"
)

// ReadFileChecked is ReadFile with a look at the file first: check reads
// the regular file path as a stream (at most max bytes, buffered) and
// may refuse it with an error, before anything is held in memory; the
// file is then read whole from the same open file, as ReadFile does. So a
// check that stops early (a count past its bound) costs a bounded read and
// no memory. A nil check reads the file as ReadFile does. Errors: ReadFile's,
// and check's, wrapped with path.
func ReadFileChecked(path string, max int64, check func(io.Reader) error) ([]byte, error) {
	if max <= 0 {
		max = MaxText
	}
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to flush
	if st.Size() > max {
		return nil, tooLarge(path, st.Size(), max)
	}
	if check == nil {
		return readAll(path, f, max)
	}
	if err := check(bufio.NewReaderSize(io.LimitReader(f, max), 64<<10)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return readAll(path, f, max)
}

// readAll reads f, the open file path, to its end, refusing more than max
// bytes (a file that grew after its size was checked).
func readAll(path string, f io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge(path, int64(len(data)), max)
	}
	return data, nil
}
