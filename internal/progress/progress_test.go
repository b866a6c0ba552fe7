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

// at is a sample of done units s seconds after the start.
func at(s float64, done int64) Sample {
	return Sample{At: time.Duration(s * float64(time.Second)), Done: done}
}

// Left on given progress: the estimate comes from the recent pace, so that
// a wait whose later units are slower than its first converges on when it
// ends instead of growing at every line.
func TestLeft(t *testing.T) {
	for _, c := range []struct {
		name    string
		samples []Sample
		total   int64
		want    time.Duration
		ok      bool
	}{
		// 10 units/s throughout: 900 left at 10/s
		{"steady", []Sample{at(0, 0), at(5, 50), at(10, 100)}, 1000, 90 * time.Second, true},
		// 50/s for 10 s, then 10/s for 60 s: the last 30 s say 10/s (the
		// average since the start, 15.7/s, would say 57 s)
		{"slower later", []Sample{at(0, 0), at(10, 500), at(40, 800), at(70, 1100)}, 2000, 90 * time.Second, true},
		// faster later: 10/s, then 100/s for the last 30 s
		{"faster later", []Sample{at(0, 0), at(60, 600), at(90, 3600)}, 6600, 30 * time.Second, true},
		// one coarse unit done at 20 s, none since: the pace runs from the
		// start through the stall, 1 unit in 50 s
		{"stall", []Sample{at(0, 0), at(20, 1), at(30, 1), at(40, 1), at(50, 1)}, 3, 100 * time.Second, true},
		// a stall inside the span after progress within it: 2 units in the
		// last 30 s
		{"stall within the span", []Sample{at(0, 0), at(30, 2), at(40, 4), at(60, 4)}, 10, 90 * time.Second, true},
		{"nothing done", []Sample{at(0, 0), at(5, 0)}, 10, 0, false},
		{"all done", []Sample{at(0, 0), at(5, 10)}, 10, 0, false},
		{"one sample", []Sample{at(5, 3)}, 10, 0, false},
	} {
		got, ok := Left(c.samples, c.total, Recent)
		if ok != c.ok || (ok && (got-c.want).Abs() > time.Millisecond) {
			t.Errorf("%s: got %s, %v; want %s, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// A wait of fast units, then slow ones (as capacity's cells): once the
// slow units have run for Recent, the estimated end stays where it is at
// each line, and the estimates read on a pruned history are the same as on
// the whole one.
func TestLeftConverges(t *testing.T) {
	const total = 3000
	var all, pruned []Sample
	var ends []time.Duration
	done := int64(0)
	for s := 0; done < total; s += 5 {
		if s > 0 {
			if s <= 20 {
				done += 100 // 20/s
			} else {
				done += 25 // 5/s
			}
		}
		smp := at(float64(s), min(done, total))
		all = append(all, smp)
		pruned = Prune(append(pruned, smp), Recent)
		left, ok := Left(all, total, Recent)
		pl, pok := Left(pruned, total, Recent)
		if ok != pok || left != pl {
			t.Fatalf("at %ds: pruned history says %s, %v; whole says %s, %v", s, pl, pok, left, ok)
		}
		if ok && s >= 20+int(Recent/time.Second) {
			ends = append(ends, smp.At+left)
		}
	}
	if len(ends) < 10 {
		t.Fatalf("only %d estimates in the slow part", len(ends))
	}
	for i, e := range ends {
		if (e - ends[0]).Abs() > time.Second {
			t.Errorf("estimate %d ends at %s, the first at %s: the estimate moves with the clock", i, e, ends[0])
		}
	}
	if len(pruned) > 10 {
		t.Errorf("pruned history keeps %d samples", len(pruned))
	}
}
