package progress

import (
	"io"
	"os"
	"sync"
)

// lockedWriter serializes the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Serialized returns w safe for concurrent writes, as meters and runners
// writing from goroutines of their own need it: an *os.File (or nil) as it
// is (each Write one system call; a terminal is still seen as one),
// anything else (a test's buffer, an embedding program's writer) behind a
// mutex.
func Serialized(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok || w == nil {
		return w
	}
	return &lockedWriter{w: w}
}
