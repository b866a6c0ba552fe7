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
// It keeps each decision as an entry (half the size of a timed: at
// L = 10^5 and W = 24 h a window holds 10^5 of them). Not safe for
// concurrent use.
type trailingWindow struct {
	w time.Duration
	// buf holds the decisions from absolute index off on; head is the
	// absolute index of the window's first decision.
	buf       []entry
	off, head int
	sum       int64
	// at is the instant of the decisions being added (pending: some).
	at      time.Duration
	pending bool
	// best is the worst window's cost; [from, to) its absolute indexes
	// while they are in buf, else kept is a copy of its decisions.
	best     int64
	from, to int
	kept     []entry
}

// entry is one decision of a trailing window: a timed without what all
// of them share (its key, accepted) or repeat (an exact time: hi = lo).
type entry struct {
	at     time.Duration
	cost   int64
	seq    int
	client int
}

// timedOf is the decisions es, on key, as timed.
func timedOf(es []entry, key string) []timed {
	out := make([]timed, len(es))
	for i, e := range es {
		out[i] = timed{lo: e.at, hi: e.at, cost: e.cost, key: key, client: e.client, ok: true, seq: e.seq}
	}
	return out
}

func newTrailingWindow(w time.Duration) *trailingWindow { return &trailingWindow{w: w} }

// add streams decision e, later than or at the one before.
func (tw *trailingWindow) add(e entry) {
	if tw.pending && e.at != tw.at {
		tw.step()
	}
	tw.at, tw.pending = e.at, true
	for tw.head < tw.off+len(tw.buf) && tw.buf[tw.head-tw.off].at <= e.at-tw.w {
		tw.sum -= tw.buf[tw.head-tw.off].cost
		tw.head++
	}
	tw.buf = append(tw.buf, e)
	tw.sum += e.cost
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
// half of buf, copying the worst window out first if it is among them;
// buf keeps its array (no garbage per compaction).
func (tw *trailingWindow) compact() {
	gone := tw.head - tw.off
	if gone < 64 || gone < len(tw.buf)/2 {
		return
	}
	if tw.best > 0 && tw.kept == nil && tw.from < tw.head {
		tw.kept = slices.Clone(tw.buf[tw.from-tw.off : tw.to-tw.off])
	}
	tw.buf = tw.buf[:copy(tw.buf, tw.buf[gone:])]
	tw.off = tw.head
}

// worst returns the worst window: its accepted cost, first and last times,
// and decisions (nil set when nothing was accepted; shared with tw: see
// timedOf).
func (tw *trailingWindow) worst() (best int64, lo, hi time.Duration, set []entry) {
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
	return tw.best, set[0].at, set[len(set)-1].at, set
}
