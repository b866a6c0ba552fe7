package measure

import (
	"sort"
	"time"
)

// PerKey summarizes one algorithm's decisions per limiter key: what a
// traffic replay, with one limit per client key, adds to its Row. Cost sums
// are in cost units.
type PerKey struct {
	// Keys is the number of distinct keys that sent at least one request.
	Keys int64 `json:"keys"`
	// KeysOver is the number of keys whose accepted cost exceeded the limit
	// within some window (t-W, t] (their own max in W above the limit).
	KeysOver int64 `json:"keys_over"`
	// WorstKey is the key with the largest max in W (the first to reach it
	// on ties); WorstMaxInWindow is that maximum and WorstRatio it divided
	// by the limit (above 1: the limit was exceeded for that key): Row.Ratio
	// of that key alone, which the replay's row repeats as its Ratio.
	WorstKey         string  `json:"worst_key"`
	WorstMaxInWindow int64   `json:"worst_max_in_window"`
	WorstRatio       float64 `json:"worst_ratio"`
	// Starved is the cost of requests the algorithm refused that an exact
	// sliding-window log, run on the same key's requests, accepted:
	// legitimate traffic refused. StarvedKeys counts the keys with some.
	Starved     int64 `json:"starved"`
	StarvedKeys int64 `json:"starved_keys"`
	// MostStarved are the keys with the most Starved cost, most first (at
	// most TopKeys; keys with none are left out).
	MostStarved []KeyCount `json:"most_starved,omitempty"`
	// PeakMemoryBytes is the largest sum of MEMORY USAGE (SAMPLES 0) over
	// the algorithm's keys among MemorySamples readings taken during the
	// replay (see replay.Run for when); memory between two readings
	// is not seen. The Row's MemoryBytes is the reading at the end.
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	// PeakMemoryAtMS is the decision time of the peak reading, ms from
	// the anchor.
	PeakMemoryAtMS float64 `json:"peak_memory_at_ms"`
	MemorySamples  int     `json:"memory_samples"`
}

// KeyCount is one key's counts in PerKey.MostStarved.
type KeyCount struct {
	Key string `json:"key"`
	// Offered, Accepted and Starved are cost sums for the key; MaxInWindow
	// is its largest accepted cost within one window.
	Offered     int64 `json:"offered"`
	Accepted    int64 `json:"accepted"`
	Starved     int64 `json:"starved"`
	MaxInWindow int64 `json:"max_in_window"`
}

// WindowPoint is one point of a Row's trailing-window series.
type WindowPoint struct {
	// TMS is a decision time, ms from the anchor.
	TMS float64 `json:"t_ms"`
	// Accepted is the cost accepted for one key within (TMS-W, TMS]: the
	// largest such sum over keys and over the decisions of one stretch of
	// time (the points are maxima of equal stretches, so an excess over
	// the limit is never smoothed away).
	Accepted int64 `json:"accepted"`
}

// TopKeys is how many keys PerKey.MostStarved lists.
const TopKeys = 5

// MaxTrailingPoints bounds a KeyTracker's trailing-window series.
const MaxTrailingPoints = 800

// KeyTracker aggregates decisions per key as they are made, in O(1)
// amortized time per decision and memory of one entry per key plus the
// decisions inside one window of each key: the exact per-key max in W
// (MaxInWindow per key), the exact sliding-window log (Ideal per key) and
// the trailing-window series. Decisions must be added in non-decreasing
// time order (equal times in decision order). Not safe for concurrent use.
type KeyTracker struct {
	limit  int64
	window time.Duration
	keys   map[string]*keyState
	order  []*keyState // by first appearance
	trail  trailing
}

type keyState struct {
	key                                    string
	acc, ideal                             queue // accepted by the limiter / by the exact log, within the window
	accSum, idealSum                       int64
	maxIn                                  int64
	maxEnd                                 time.Duration
	offered, accepted, idealTotal, starved int64
}

// queue is a FIFO of events; the head index moves and the slice is
// compacted when half of it is dead.
type queue struct {
	ev   []Event
	head int
}

func (q *queue) push(e Event) { q.ev = append(q.ev, e) }

// dropUpTo removes events at or before t and returns their cost.
func (q *queue) dropUpTo(t time.Duration) int64 {
	var sum int64
	for q.head < len(q.ev) && q.ev[q.head].At <= t {
		sum += q.ev[q.head].Cost
		q.head++
	}
	if q.head == len(q.ev) {
		q.ev, q.head = q.ev[:0], 0
	} else if q.head > 64 && q.head*2 > len(q.ev) {
		n := copy(q.ev, q.ev[q.head:])
		q.ev, q.head = q.ev[:n], 0
	}
	return sum
}

// NewKeyTracker tracks decisions against limit cost units per window (both
// > 0).
func NewKeyTracker(limit int64, window time.Duration) *KeyTracker {
	return &KeyTracker{limit: limit, window: window, keys: map[string]*keyState{},
		trail: trailing{width: max(window/8, time.Millisecond)}}
}

// Add records one decision: key asked for cost at time at (any common
// origin) and the algorithm allowed it or not.
func (t *KeyTracker) Add(key string, at time.Duration, cost int64, allowed bool) {
	k := t.keys[key]
	if k == nil {
		k = &keyState{key: key}
		t.keys[key] = k
		t.order = append(t.order, k)
	}
	k.offered += cost
	// the exact log: accept when the window's accepted cost leaves room
	k.idealSum -= k.ideal.dropUpTo(at - t.window)
	idealOK := k.idealSum+cost <= t.limit
	if idealOK {
		k.ideal.push(Event{At: at, Cost: cost})
		k.idealSum += cost
		k.idealTotal += cost
	}
	k.accSum -= k.acc.dropUpTo(at - t.window)
	if allowed {
		k.accepted += cost
		k.acc.push(Event{At: at, Cost: cost})
		k.accSum += cost
		if k.accSum > k.maxIn {
			k.maxIn, k.maxEnd = k.accSum, at
		}
	} else if idealOK {
		k.starved += cost
	}
	t.trail.add(at, k.accSum)
}

// KeyTotals are the sums over keys that a Row holds.
type KeyTotals struct {
	// Ideal sums the exact log's accepted cost over keys.
	Ideal int64
	// MaxInWindow and MaxWindowEnd are the worst key's max in W and its t.
	MaxInWindow  int64
	MaxWindowEnd time.Duration
}

// Summary returns the per-key figures so far (memory fields left zero) and
// the totals. O(keys log TopKeys).
func (t *KeyTracker) Summary() (PerKey, KeyTotals) {
	var p PerKey
	var tot KeyTotals
	p.Keys = int64(len(t.order))
	var worst *keyState
	for _, k := range t.order {
		tot.Ideal += k.idealTotal
		if k.maxIn > t.limit {
			p.KeysOver++
		}
		if worst == nil || k.maxIn > worst.maxIn {
			worst = k
		}
		if k.starved > 0 {
			p.Starved += k.starved
			p.StarvedKeys++
			p.MostStarved = insertTop(p.MostStarved, KeyCount{Key: k.key, Offered: k.offered,
				Accepted: k.accepted, Starved: k.starved, MaxInWindow: k.maxIn})
		}
	}
	if worst != nil {
		p.WorstKey, p.WorstMaxInWindow = worst.key, worst.maxIn
		p.WorstRatio = float64(worst.maxIn) / float64(t.limit)
		tot.MaxInWindow, tot.MaxWindowEnd = worst.maxIn, worst.maxEnd
	}
	return p, tot
}

// insertTop keeps the TopKeys largest by Starved (first seen first on ties).
func insertTop(top []KeyCount, c KeyCount) []KeyCount {
	i := sort.Search(len(top), func(i int) bool { return top[i].Starved < c.Starved })
	if i >= TopKeys {
		return top
	}
	top = append(top, KeyCount{})
	copy(top[i+1:], top[i:])
	top[i] = c
	if len(top) > TopKeys {
		top = top[:TopKeys]
	}
	return top
}

// Trailing returns the trailing-window series: for each stretch of time
// (at most MaxTrailingPoints of them, of equal length, a multiple of W/8),
// the largest accepted cost one key held in its window (t-W, t] right
// after one of its decisions in that stretch, at that decision's time t.
// Stretches without decisions have no point.
func (t *KeyTracker) Trailing(origin time.Duration) []WindowPoint {
	out := make([]WindowPoint, 0, len(t.trail.bins))
	for _, b := range t.trail.bins {
		if b.set {
			out = append(out, WindowPoint{TMS: float64((b.at - origin).Microseconds()) / 1000, Accepted: b.v})
		}
	}
	return out
}

// trailing keeps the max of a series per bin of width, from the first
// time added; when there would be more than MaxTrailingPoints bins the
// width doubles and neighbouring bins merge (the max of a merge is the
// max of its parts, so no peak is lost).
type trailing struct {
	width   time.Duration
	origin  time.Duration
	started bool
	bins    []bin
}

type bin struct {
	at  time.Duration
	v   int64
	set bool
}

func (tr *trailing) add(at time.Duration, v int64) {
	if !tr.started {
		tr.origin, tr.started = at, true
	}
	i := int((at - tr.origin) / tr.width)
	if i < 0 {
		i = 0
	}
	for i >= MaxTrailingPoints {
		tr.halve()
		i = int((at - tr.origin) / tr.width)
	}
	for len(tr.bins) <= i {
		tr.bins = append(tr.bins, bin{})
	}
	if b := &tr.bins[i]; !b.set || v > b.v {
		*b = bin{at: at, v: v, set: true}
	}
}

// halve doubles the width, merging bins pairwise.
func (tr *trailing) halve() {
	n := (len(tr.bins) + 1) / 2
	for j := range n {
		b := tr.bins[2*j]
		if 2*j+1 < len(tr.bins) {
			if c := tr.bins[2*j+1]; c.set && (!b.set || c.v > b.v) {
				b = c
			}
		}
		tr.bins[j] = b
	}
	tr.bins = tr.bins[:n]
	tr.width *= 2
}
