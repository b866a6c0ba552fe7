package verify

import (
	"slices"
	"time"
)

// trailingWindow streams one key's accepted decisions, with exact times, in
// time order, through the trailing window (t-w, t], and keeps the worst
// window seen: the most accepted cost, its decisions, their first and last
// times. It holds the decisions of the current window only (and, once they
// have left it, a copy of the worst window's): its memory is bounded by
// the window, not by the decisions streamed. Decisions at one instant are
// one step: the window at t holds all of them. On a tie the earliest worst
// window stays. The maximum is maxConservative's on exact times (the set
// starting at decision i holds those before lo_i + w: the same sets).
// Not safe for concurrent use.
type trailingWindow struct {
	w time.Duration
	// buf holds the decisions from absolute index off on; head is the
	// absolute index of the window's first decision.
	buf       []timed
	off, head int
	sum       int64
	// at is the instant of the decisions being added (pending: some).
	at      time.Duration
	pending bool
	// best is the worst window's cost; [from, to) its absolute indexes
	// while they are in buf, else kept is a copy of its decisions.
	best     int64
	from, to int
	kept     []timed
}

func newTrailingWindow(w time.Duration) *trailingWindow { return &trailingWindow{w: w} }

// add streams decision x, later than or at the one before.
func (tw *trailingWindow) add(x timed) {
	if tw.pending && x.lo != tw.at {
		tw.step()
	}
	tw.at, tw.pending = x.lo, true
	for tw.head < tw.off+len(tw.buf) && tw.buf[tw.head-tw.off].lo <= x.lo-tw.w {
		tw.sum -= tw.buf[tw.head-tw.off].cost
		tw.head++
	}
	tw.buf = append(tw.buf, x)
	tw.sum += x.cost
	tw.compact()
}

// step judges the window closed by the decisions at tw.at.
func (tw *trailingWindow) step() {
	tw.pending = false
	if tw.sum > tw.best {
		tw.best, tw.from, tw.to, tw.kept = tw.sum, tw.head, tw.off+len(tw.buf), nil
	}
}

// compact drops the decisions that left the window when they are over
// half of buf, copying the worst window out first if it is among them.
func (tw *trailingWindow) compact() {
	gone := tw.head - tw.off
	if gone < 64 || gone < len(tw.buf)/2 {
		return
	}
	if tw.best > 0 && tw.kept == nil && tw.from < tw.head {
		tw.kept = slices.Clone(tw.buf[tw.from-tw.off : tw.to-tw.off])
	}
	tw.buf = slices.Clone(tw.buf[gone:])
	tw.off = tw.head
}

// worst returns the worst window: its accepted cost, first and last times,
// and decisions (nil set when nothing was accepted).
func (tw *trailingWindow) worst() (best int64, lo, hi time.Duration, set []timed) {
	if tw.pending {
		tw.step()
	}
	if tw.best == 0 {
		return 0, 0, 0, nil
	}
	set = tw.kept
	if set == nil {
		set = tw.buf[tw.from-tw.off : tw.to-tw.off]
	}
	return tw.best, set[0].lo, set[len(set)-1].lo, set
}
