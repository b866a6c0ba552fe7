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

// Recent is the span of progress the time left is estimated from (see
// Left): long enough to smooth a few units of uneven size, short enough
// that a change of pace shows within it.
const Recent = 30 * time.Second

// Meter counts done units of a known total and shows them on its writer
// until Stop. Add is safe for concurrent use; a nil *Meter does nothing.
type Meter struct {
	desc  string
	total int64
	done  atomic.Int64
	start time.Time
	// samples are the progress readings Line estimates from, oldest
	// first; guarded by mu (Line runs on the meter's goroutine and in tests)
	mu      sync.Mutex
	samples []Sample
	stop    chan struct{}
	wg      sync.WaitGroup
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
// 12s so far, about 28s left" (the time left is Left's, from the pace of
// the last Recent; each call adds a reading).
func (m *Meter) Line(unit string) string {
	done := m.done.Load()
	el := m.now().Sub(m.start)
	s := fmt.Sprintf("%s: %d of %d %s (%.0f%%), %s so far", m.desc, done, m.total, unit,
		100*float64(done)/float64(m.total), el.Round(time.Second))
	m.mu.Lock()
	if len(m.samples) == 0 {
		m.samples = append(m.samples, Sample{})
	}
	m.samples = Prune(append(m.samples, Sample{At: el, Done: done}), Recent)
	left, ok := Left(m.samples, m.total, Recent)
	m.mu.Unlock()
	switch {
	case !ok:
	case left < time.Second:
		s += ", under 1s left"
	default:
		s += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return s
}

// Sample is a progress reading: Done units at At after the start.
type Sample struct {
	At   time.Duration
	Done int64
}

// Left estimates the time until total units are done from samples (oldest
// first, At and Done not decreasing; the last is now): the units left at
// the pace of the last recent, that is the units done since the first
// sample at most recent before the last, over the time since it. When
// nothing was done in that span, the pace runs from the last sample with
// fewer units done, so that a stall lengthens the estimate by what it
// costs and no more. The pace of the first units alone never decides the
// estimate of a long wait whose later units are slower (or faster): under
// a steady pace the estimate counts down with the clock.
//
// ok is false when there is nothing to estimate from: no unit done yet,
// all done, or fewer than two samples.
func Left(samples []Sample, total int64, recent time.Duration) (left time.Duration, ok bool) {
	if len(samples) < 2 {
		return 0, false
	}
	last := samples[len(samples)-1]
	if last.Done <= 0 || last.Done >= total {
		return 0, false
	}
	base := samples[baseIndex(samples, recent)]
	units, span := last.Done-base.Done, last.At-base.At
	if units <= 0 || span <= 0 {
		return 0, false
	}
	return time.Duration(float64(span) * float64(total-last.Done) / float64(units)), true
}

// Prune drops the samples Left reads no more, for this recent and every
// later newest sample: those before the one its pace runs from.
func Prune(samples []Sample, recent time.Duration) []Sample {
	if len(samples) < 2 {
		return samples
	}
	return append(samples[:0], samples[baseIndex(samples, recent):]...)
}

// baseIndex is the sample Left's pace runs from: the first at most recent
// before the newest, or before it the last with fewer units done than the
// newest (0 when there is none).
func baseIndex(samples []Sample, recent time.Duration) int {
	last := samples[len(samples)-1]
	i := len(samples) - 1
	for i > 0 && samples[i-1].At >= last.At-recent {
		i--
	}
	for i > 0 && samples[i].Done >= last.Done {
		i--
	}
	return i
}
