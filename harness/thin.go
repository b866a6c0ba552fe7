package harness

import (
	"math"
	"time"

	"github.com/ratelab/ratelab/internal/progress"
	"github.com/ratelab/ratelab/scenarios"
)

// Thinning bursts (Job.Thin).
//
// A burst is a maximal run of consecutive arrivals of a schedule on one
// key, from clients whose clocks agree (one client, or several without
// Job.Skew between them), of one cost, each at most ThinStep after the one
// before (the adversarial families send their bursts 0 or 1 µs apart). In
// a pipelined virtual run a client reaches the limiter only as its clock
// (Job.ClockSkew): the calls of such a run are the same calls, in the same
// order, whichever of these clients sends them.
// Against a limiter that works, the second burst of a pair is denied from
// its first arrival to its last, and a denied request changes nothing (the
// rule ratelab's scripts keep: only accepted requests are recorded). So,
// with Job.Thin, once ThinAfter arrivals of a burst in a row came back
// denied, the rest of the burst is probed: the next arrival sent is the
// one 2 further on, then 4, 8, ... further, up to a stride of
// min(burst length, Job.Limit.Count)/ThinStrideDiv, and the burst's last
// arrival is always sent. An accepted probe resumes sending every arrival
// (ThinAfter denials in a row again before probing). A probe is alone in
// its round trip, so that the arrivals after an accepted one can still be
// sent. Bursts shorter than 2*ThinAfter, or whose stride could not reach
// 2 (a Job.Limit.Count under 128, zero included), are sent whole.
//
// What was not sent is not judged and not recorded: the verdict rests on
// what was sent and accepted, so thinning never makes a false alarm; it
// can only miss. It misses nothing against a limiter whose denials change
// no state and whose room to accept does not shrink while it denies (fixed
// windows, logs, buckets, GCRA: their room only grows with time until they
// accept): if a skipped arrival would have been accepted, the next probe
// (at most a stride later; the burst's last arrival at worst) is accepted
// too, and every arrival after it is sent. Such a reopening costs at most
// stride-1 <= Limit/64 arrivals the full burst would have had accepted, so
// a ratio found can be lower by at most 1/64 per reopening. A limiter whose
// denials do change its state (it records or counts denied requests) is
// sent fewer of them: a fault that needs more than ThinAfter denials in a
// row is not reached within a thinned burst.

// ThinAfter is how many arrivals of a burst in a row must come back denied
// before the rest of it is probed (a round trip's worth at verify's
// pipeline depth).
const ThinAfter = 256

// ThinStep is the largest step between two arrivals of one burst.
const ThinStep = time.Microsecond

// ThinStrideDiv sets the largest probe stride: min(burst length,
// Job.Limit.Count) / ThinStrideDiv arrivals.
const ThinStrideDiv = 64

// thins reports whether job j's run thins its bursts: Thin set, and the
// job pipelined in virtual time (runThinned).
func (r *Runner) thins(j Job) bool {
	return j.Thin && (r.Clock == VirtualClock || r.Clock == "") && r.pipelined(j)
}

// thinner picks the arrivals of a pipelined job's next round trip and
// follows their answers (see above). It reads the job's arrivals as it
// needs them and holds those from the current burst's start on: a burst
// and a round trip, not the schedule. Not safe for concurrent use.
type thinner struct {
	read func() (scenarios.Arrival, bool) // the job's next arrival
	// arr holds arrivals [base, base+len(arr)); done: none is left to read
	arr   []scenarios.Arrival
	base  int
	done  bool
	thin  bool
	limit int64
	meter *progress.Meter // skipped arrivals count as done
	next  int             // the first arrival neither sent nor skipped
	// the current burst [start, end), its denied arrivals in a row, the
	// stride to the next probe (0: every arrival is sent) and its cap
	start, end int
	denied     int
	stride     int
	maxStride  int
	skipped    int64
	buf        []int
	// skew is the job's clock skew by client (Job.ClockSkew)
	skew func(int) time.Duration
}

// newThinner returns the thinner of job j whose arrivals read returns in
// order: one that sends every arrival in order, depth at a time, unless r
// thins j.
func (r *Runner) newThinner(j Job, read func() (scenarios.Arrival, bool)) *thinner {
	return &thinner{read: read, thin: r.thins(j), limit: j.Limit.Count, meter: r.meter, skew: j.ClockSkew}
}

// has reports whether there is an arrival i (i at or after the burst's
// start), reading the arrivals up to it.
func (t *thinner) has(i int) bool {
	for !t.done && i >= t.base+len(t.arr) {
		a, ok := t.read()
		if !ok {
			t.done = true
			break
		}
		t.arr = append(t.arr, a)
	}
	return i < t.base+len(t.arr)
}

// at is arrival i, which has reported.
func (t *thinner) at(i int) scenarios.Arrival { return t.arr[i-t.base] }

// release drops the arrivals before i once they are over half of those
// held.
func (t *thinner) release(i int) {
	if k := i - t.base; k > 0 && 2*k >= len(t.arr) {
		t.arr = t.arr[:copy(t.arr, t.arr[k:])]
		t.base = i
	}
}

// sameBurst reports whether b may follow a in one burst; skew is the
// job's clock skew by client (Job.ClockSkew).
func sameBurst(a, b scenarios.Arrival, skew func(int) time.Duration) bool {
	d := b.At - a.At
	return d >= 0 && d <= ThinStep && a.Key == b.Key && a.Cost == b.Cost &&
		(a.Client == b.Client || skew(a.Client) == skew(b.Client))
}

// reach makes the current burst the one holding arrival i (i at or after
// the current burst's start; bursts are taken in schedule order).
func (t *thinner) reach(i int) {
	for i >= t.end {
		t.start, t.end = t.end, t.end+1
		for t.has(t.end) && sameBurst(t.at(t.end-1), t.at(t.end), t.skew) {
			t.end++
		}
		t.denied, t.stride = 0, 0
		t.maxStride = int(min(int64(t.end-t.start), t.limit) / ThinStrideDiv)
		if t.end-t.start < 2*ThinAfter || t.maxStride < 2 {
			t.maxStride = 0 // sent whole
		}
	}
}

// pick returns the indexes (in the schedule, ascending) of the arrivals of
// the next round trip, at most depth; none when the schedule is done. The
// slice is reused by the next call.
func (t *thinner) pick(depth int) []int {
	t.buf = t.buf[:0]
	t.release(min(t.start, t.next)) // nothing before the burst is read again
	if !t.has(t.next) {
		return nil
	}
	stop := math.MaxInt
	if t.thin {
		t.reach(t.next)
		if t.stride > 0 { // probing: one arrival, stride on
			p := min(t.next-1+t.stride, t.end-1)
			t.skipped += int64(p - t.next)
			t.meter.Add(int64(p - t.next))
			t.next = p
			t.stride = min(2*t.stride, t.maxStride)
			stop = p + 1
		} else if t.denied > 0 && t.maxStride > 0 && t.next+ThinAfter-t.denied < t.end {
			// stop where the denials in a row would reach ThinAfter
			stop = t.next + ThinAfter - t.denied
		}
	}
	for i := t.next; i < stop && len(t.buf) < depth && t.has(i); i++ {
		t.buf = append(t.buf, i)
	}
	t.next += len(t.buf)
	return t.buf
}

// saw follows the answers to the arrivals seqs (as pick returned them):
// outs[k] answered seqs[k]. A denial extends the burst's run of denials;
// an acceptance or an error ends it and resumes sending every arrival.
func (t *thinner) saw(seqs []int, outs []Outcome) {
	if !t.thin {
		return
	}
	for k, seq := range seqs {
		t.reach(seq)
		if o := &outs[k]; o.Err == nil && !o.Decision.Allowed {
			t.denied++
		} else {
			t.denied, t.stride = 0, 0
		}
	}
	if t.stride == 0 && t.maxStride > 0 && t.denied >= ThinAfter && t.next < t.end {
		t.stride = 2
	}
}
