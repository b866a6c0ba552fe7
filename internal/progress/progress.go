// Package progress shows how far a long wait has got, with an estimate of
// the time left: one line redrawn in place on a terminal (a
// schollz/progressbar bar), a plain line every Every elsewhere (logs, CI),
// nothing for a wait shorter than that.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Every is how often a Meter on a writer that is not a terminal prints a
// line (the first after Every: a shorter wait prints none).
var Every = 5 * time.Second

// Meter counts done units of a known total and shows them on its writer
// until Stop. Add is safe for concurrent use; a nil *Meter does nothing.
type Meter struct {
	desc  string
	total int64
	done  atomic.Int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
	// now returns the time; tests replace it.
	now func() time.Time
}

// Start shows the progress of desc ("run redis clock"), total units
// (decisions, keys; > 0) on w until Stop: a bar when w is a terminal, a
// plain line every Every otherwise. A nil w or total <= 0 returns nil (a
// Meter that shows nothing).
func Start(w io.Writer, desc, unit string, total int64) *Meter {
	if w == nil || total <= 0 {
		return nil
	}
	m := &Meter{desc: desc, total: total, start: time.Now(), stop: make(chan struct{}), now: time.Now}
	m.wg.Add(1)
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30), progressbar.OptionShowCount(), progressbar.OptionSetItsString(unit),
			progressbar.OptionShowIts(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
		go func() {
			defer m.wg.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-m.stop:
					_ = bar.Finish() // clears the line: nothing to keep on a terminal
					return
				case <-t.C:
					_ = bar.Set64(m.done.Load()) // as Finish
				}
			}
		}()
		return m
	}
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(Every)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				fmt.Fprintln(w, m.Line(unit))
			}
		}
	}()
	return m
}

// Add counts n more units done.
func (m *Meter) Add(n int64) {
	if m != nil {
		m.done.Add(n)
	}
}

// Stop stops showing progress and waits until it has.
func (m *Meter) Stop() {
	if m == nil {
		return
	}
	close(m.stop)
	m.wg.Wait()
}

// Line is the plain progress line: "run: 1200 of 4032 decisions (30%),
// 12s so far, about 28s left" (the time left assumes the pace so far).
func (m *Meter) Line(unit string) string {
	done := m.done.Load()
	el := m.now().Sub(m.start)
	s := fmt.Sprintf("%s: %d of %d %s (%.0f%%), %s so far", m.desc, done, m.total, unit,
		100*float64(done)/float64(m.total), el.Round(time.Second))
	if done > 0 && done < m.total {
		left := time.Duration(float64(el) * float64(m.total-done) / float64(done))
		if left < time.Second {
			s += ", under 1s left"
		} else {
			s += fmt.Sprintf(", about %s left", left.Round(time.Second))
		}
	}
	return s
}
