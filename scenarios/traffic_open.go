package scenarios

import (
	"os"
	"strings"

	fielderr "github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/internal/input"
)

// StdinPath is the traffic path that means standard input.
const StdinPath = "-"

// OpenTraffic opens the traffic file path for reading and returns it with
// its size in bytes (as stored: before any gzip decompression), so that a
// missing, unreadable or empty file, or one that is not a regular file
// (input.Open: a FIFO, a device, a directory), is refused before anything
// else is done. Path "-" (StdinPath) is standard input, and "/dev/stdin" or
// "/dev/fd/N" a descriptor given by the caller (a pipe, a process
// substitution): read as they come, with size -1 (unknown); an empty one is found empty
// when read (ErrEmptyTraffic from the reader). The caller closes the file
// (not standard input). Errors are *field.Error naming "traffic"; an empty
// file's wraps ErrEmptyTraffic.
func OpenTraffic(path string) (*os.File, int64, error) {
	if path == StdinPath {
		return os.Stdin, -1, nil
	}
	if path == "/dev/stdin" || strings.HasPrefix(path, "/dev/fd/") {
		// a descriptor the caller opened for us (a pipe, a process
		// substitution): read as it comes, its size unknown
		f, err := os.Open(path)
		if err != nil {
			return nil, 0, fielderr.Errorf("traffic", "%w", err)
		}
		return f, -1, nil
	}
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

// TimeColumns are the names a time column or field is known by, when
// TrafficOptions.TimeField is not given: the first, "timestamp", is the
// default; when a CSV header or a JSON object has not it but exactly one
// of the others, that one is the time (its unit still found by magnitude,
// or TimeUnit).
var TimeColumns = []string{"timestamp", "timestamp_ms", "ts", "time", "@timestamp"}

// timeColumn returns the time column among names when no time field was
// given: "timestamp" when present, else the only one of TimeColumns there;
// "" when there is none or more than one (the caller's error then names
// "timestamp" and lists the columns).
func timeColumn(names []string) string {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	if has[TimeColumns[0]] {
		return TimeColumns[0]
	}
	found := ""
	for _, c := range TimeColumns[1:] {
		if has[c] {
			if found != "" {
				return ""
			}
			found = c
		}
	}
	return found
}
