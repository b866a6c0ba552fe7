package progress

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
)

// Serialized keeps a file (and nil) as it is, and makes a buffer safe for
// writers on several goroutines: no write is lost.
func TestSerialized(t *testing.T) {
	if Serialized(os.Stderr) != os.Stderr || Serialized(nil) != nil {
		t.Error("a file or nil was wrapped")
	}
	var b bytes.Buffer
	w := Serialized(&b)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = w.Write([]byte("x\n"))
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "x\n"); n != 800 {
		t.Errorf("got %d lines, want 800", n)
	}
}
