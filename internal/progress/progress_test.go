package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the meter's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLine(t *testing.T) {
	m := &Meter{desc: "run", total: 400, start: time.Unix(0, 0)}
	m.now = func() time.Time { return time.Unix(10, 0) }
	m.Add(100)
	if got, want := m.Line("decisions"), "run: 100 of 400 decisions (25%), 10s so far, about 30s left"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	m.Add(300)
	if got := m.Line("decisions"); strings.Contains(got, "left") {
		t.Errorf("done: %q still estimates a time left", got)
	}
}

// Not a terminal: a plain line every Every, none after Stop; nil writers
// and meters are no-ops.
func TestPlainLines(t *testing.T) {
	old := Every
	Every = 20 * time.Millisecond
	defer func() { Every = old }()
	var w syncBuffer
	m := Start(&w, "verify", "trials", 10)
	m.Add(5)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(w.String(), "verify: 5 of 10 trials (50%)") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	m.Stop()
	if !strings.Contains(w.String(), " left") {
		t.Errorf("no estimate of the time left in %q", w.String())
	}
	n := len(w.String())
	time.Sleep(50 * time.Millisecond)
	if len(w.String()) != n {
		t.Error("lines after Stop")
	}
	var nilMeter *Meter
	nilMeter.Add(1)
	nilMeter.Stop()
	if Start(nil, "x", "y", 10) != nil || Start(&w, "x", "y", 0) != nil {
		t.Error("a meter for nothing to show")
	}
}
