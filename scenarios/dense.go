package scenarios

import (
	"fmt"
	"math"
	"time"
)

// The dense stream: the adversary for rounding. One cost-1 request every
// step, on one key from one client, through DenseWindows windows, so every
// phase of the window is probed at a spacing finer than the limiter's clock
// resolution and its emission interval W/L. A limiter that rounds (a GCRA
// rounding half up, a window keyed by rounded seconds, a log trimmed with <
// instead of <=) admits L+1 in some trailing window of such a stream even
// when it never does against bursts.

// DenseFamily is the family name of DenseTrial.
const DenseFamily = "dense"

// DenseWindows is how many windows the dense stream covers: from one window
// before the anchor (-W) to two after it (+2W).
const DenseWindows = 3

// DenseCap returns the most arrivals DenseStream makes for a limit of limit
// cost units: 20*limit + 10000 (at least 6 arrivals per emission interval
// W/L over DenseWindows windows, and 10000 for small limits). A limit <= 0
// gives 10000. Each arrival costs one decision: at verify's ~23,000
// decisions/s, L = 1000 takes about 1.3 s.
func DenseCap(limit int64) int64 {
	const base, perUnit = 10_000, 20
	if limit <= 0 {
		return base
	}
	if limit > (math.MaxInt64-base)/perUnit {
		return math.MaxInt64
	}
	return perUnit*limit + base
}

// denseStep returns the step DenseStream uses for p (Limit and Window set)
// and a requested step: a step <= 0 means the finer of W/(4L) and 1 ms;
// then coarsened (if needed) so the stream holds at most DenseCap(L)
// arrivals; always a whole number of microseconds, at least 1 µs.
func denseStep(p Params, step time.Duration) time.Duration {
	L, W := p.Limit, p.Window
	if step <= 0 {
		step = min(W/4/time.Duration(L), time.Millisecond)
	}
	span := DenseWindows * W
	// ceil(span/step) <= cap  <=>  step >= span/cap (a cap above span
	// allows any step: span/cap < 1 ns)
	if floor := ceilDiv(span, time.Duration(min(DenseCap(L), int64(span)))); step < floor {
		step = floor
	}
	return max(ceilDiv(step, time.Microsecond)*time.Microsecond, time.Microsecond)
}

// DenseStream returns the dense stream for limit p.Limit per p.Window: cost-1
// arrivals on UserKey from client 0, step apart, the first at -W + offset,
// the last before +2W + offset, where offset in [0, step) is drawn from
// p.Seed (whole µs) so that seeds probe different sub-step phases. Sorted by
// At; ceil(3W/step) arrivals, never more than DenseCap(L).
//
// step is the spacing: zero or negative means the finer of W/(4L) and 1 ms;
// a step finer than the cap allows is coarsened to the finest allowed; every
// step is rounded up to a whole microsecond (the limiters' resolution). A zero
// Limit or Window in p means the defaults (50 per 10s). Pure.
func DenseStream(p Params, step time.Duration) []Arrival {
	p = withDefaults(p, shortDefaults)
	step = denseStep(p, step)
	out := make([]Arrival, 0, ceilDiv(DenseWindows*p.Window, step))
	for a := range denseSeq(p, step) {
		out = append(out, a)
	}
	return out
}

// DenseTrial is the dense stream as a Safety trial of the "dense" family, for
// the adversarial family list (step as in DenseStream). It runs in virtual
// time when the target injects time.
func DenseTrial(p Params, step time.Duration) Trial {
	return denseTrial(p, step).Built()
}

// denseTrial is DenseTrial with its arrivals made by its Build.
func denseTrial(p Params, step time.Duration) Trial {
	p = withDefaults(p, shortDefaults)
	step = denseStep(p, step)
	n := ceilDiv(DenseWindows*p.Window, step) // DenseStream's length
	name := fmt.Sprintf("1 request every %s for %d windows (%d requests)", step, DenseWindows, n)
	return Trial{Family: DenseFamily, Name: name, Schedule: Schedule{Scenario: DenseFamily, Params: p}, Judge: Safety,
		Build: func() []Arrival { return finish(DenseFamily, p, DenseStream(p, step)).Arrivals }, Stream: denseSeq(p, step)}
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b time.Duration) time.Duration { return (a + b - 1) / b }

// FineMaxLimit is the largest limit DenseFineTrial runs at: above it the
// emission interval W/L of any window ratelab verifies is short enough for
// the uniform dense stream.
const FineMaxLimit = 10_000

// DenseFineTrial is the dense family's second trial, whose steps are set by
// the limiter's resolution res (zero means 1 µs), not by W: one cost-1
// request at the boundary 0, then, before each of the next L+1 emission
// boundaries k*W/L, requests at offsets res*q^j before it (j from the
// largest, W/(2L), down to res: a geometric ladder, q = 2 when it fits),
// and one on it. A limiter that admits a request e >= res before its
// emission boundary (a bucket forgiving jitter, a clock rounded to the
// second) admits one on the ladder at least e/q early, so L+1 admissions
// fit in less than W, at a window of a second as of a day. At most
// (L+2)*(J+1) requests, J <= 29, capped at 2(L+2) + 10000 by a coarser
// ladder (J >= 1: with one step, only res before each boundary). ok is false when the interval W/L is under 4*res (the
// uniform stream already steps by the resolution) or Limit >
// FineMaxLimit. Pure.
func DenseFineTrial(p Params, res time.Duration) (Trial, bool) {
	p = withDefaults(p, shortDefaults)
	r := max(res, time.Microsecond)
	L, W := p.Limit, p.Window
	if L > FineMaxLimit {
		return Trial{}, false
	}
	T := W / time.Duration(L)
	if T < 4*r {
		return Trial{}, false
	}
	top := T / 2
	// J offsets res*q^j, j = 0..J-1, the last one top
	J := 1
	for d := r; d < top; d *= 2 {
		J++
	}
	if most := int((2*(L+2) + 10000) / (L + 2)); J+1 > most {
		J = max(1, most-1)
	}
	offsets := make([]time.Duration, J)
	q := 1.0
	if J > 1 {
		q = math.Pow(float64(top)/float64(r), 1/float64(J-1))
	}
	for j := range offsets {
		d := time.Duration(float64(r) * math.Pow(q, float64(j)))
		offsets[j] = max(d.Truncate(r), r)
	}
	if J > 1 {
		offsets[J-1] = top.Truncate(r)
	}
	arr := []Arrival{{At: 0, Key: UserKey, Cost: 1}}
	for k := int64(1); k <= L+1; k++ {
		b := time.Duration(k) * T
		last := time.Duration(-1)
		for j := J - 1; j >= 0; j-- {
			at := b - offsets[j]
			if at <= last {
				continue
			}
			arr = append(arr, Arrival{At: at, Key: UserKey, Cost: 1})
			last = at
		}
		arr = append(arr, Arrival{At: b, Key: UserKey, Cost: 1})
	}
	name := fmt.Sprintf("a ladder of %d steps from %s down to %s before each of %d emission boundaries W/L apart (%d requests)",
		J, top.Truncate(r), r, L+1, len(arr))
	return Trial{Family: DenseFamily, Name: name, Schedule: finish(DenseFamily, p, arr), Judge: Safety}, true
}
