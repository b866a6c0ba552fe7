package harness

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/scenarios"
)

// ClockMode says whose clock the limiters decide on.
type ClockMode string

const (
	// VirtualClock: the harness injects exact timestamps and does not sleep;
	// a 24-hour scenario runs in seconds. Key TTLs are not exercised.
	VirtualClock ClockMode = "virtual"
	// RedisClock: real time; scripts read Redis TIME; the schedule's anchor
	// is a window boundary on the Redis server's clock.
	RedisClock ClockMode = "redis"
	// ClientClock: real time; the harness injects its own wall clock.
	ClientClock ClockMode = "client"
)

// ClockModes lists the clock modes in help order.
var ClockModes = []ClockMode{VirtualClock, RedisClock, ClientClock}

// VirtualEpoch is where virtual time starts: a virtual run's anchor is the
// first window boundary (a multiple of the window since the Unix epoch) that
// leaves room for the schedule's earliest arrival after this instant.
var VirtualEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Job is one limiter to run one schedule.
type Job struct {
	Limiter algorithms.Limiter
	// Limit is what the metrics judge against (ratio = max_in_window / Limit.Limit).
	Limit    algorithms.Limit
	Schedule scenarios.Schedule
	// Prefix is prepended to every arrival's key, which is hash-tagged:
	// "<Prefix>{<key>}".
	Prefix string
}

// Runner runs jobs against one Redis on one clock. Set the fields, then call
// Run; a Runner is not meant for concurrent Run calls.
type Runner struct {
	Redis redis.UniversalClient
	Clock ClockMode
	// Log receives every decision as it is made; nil discards them.
	Log *DecisionLog
	// Progress receives one-line progress messages; nil discards them.
	Progress io.Writer
	// Lead is how far ahead of the first arrival a real-time run schedules
	// its anchor; zero means 300 ms.
	Lead time.Duration
}

// outcome is the measured answer to one arrival.
type outcome struct {
	cost       int64
	sent, recv time.Time
	d          algorithms.Decision
	err        error
}

// Run runs jobs that share one schedule shape (same window). In virtual time
// they run one after another, each arrival in schedule order. In real time
// (redis or client clock) they run at once, one goroutine per simulated
// client per job, against one anchor, so every algorithm sees the same
// boundary. It returns one Row per job, with memory measured after the jobs.
// A cancelled ctx stops the run; the rows then hold what was measured.
func (r *Runner) Run(ctx context.Context, jobs []Job) ([]Row, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	outs := make([][]outcome, len(jobs))
	hists := make([]*hdrhistogram.Histogram, len(jobs))
	anchors := make([]time.Time, len(jobs))
	durations := make([]time.Duration, len(jobs))
	var runErr error
	switch r.Clock {
	case VirtualClock, "":
		for i, j := range jobs {
			start := time.Now()
			anchors[i] = virtualAnchor(j.Schedule)
			outs[i], hists[i] = r.runVirtual(ctx, j, anchors[i])
			durations[i] = time.Since(start)
			if err := ctx.Err(); err != nil {
				runErr = err
				break
			}
		}
	case RedisClock, ClientClock:
		var err error
		anchor, offset, err := r.realAnchor(ctx, jobs[0].Schedule)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range jobs {
			anchors[i] = anchor
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				outs[i], hists[i] = r.runReal(ctx, jobs[i], anchor, offset)
				durations[i] = time.Since(start)
			}(i)
		}
		wg.Wait()
		runErr = ctx.Err()
	default:
		return nil, fmt.Errorf("unknown clock %q", r.Clock)
	}
	if r.Log != nil {
		if err := r.Log.Flush(); err != nil && runErr == nil {
			runErr = fmt.Errorf("decisions log: %w", err)
		}
	}
	rows := make([]Row, 0, len(jobs))
	for i, j := range jobs {
		if outs[i] == nil {
			continue
		}
		row := summarize(j, outs[i], hists[i], anchors[i], r.Clock)
		row.DurationMS = durations[i].Milliseconds()
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		keys, err := ScanKeys(mctx, r.Redis, j.Prefix)
		if err == nil {
			row.Keys = int64(len(keys))
			row.MemoryBytes, err = MemoryUsage(mctx, r.Redis, keys)
		}
		cancel()
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("memory of %s: %w", j.Limiter.Name(), err)
		}
		rows = append(rows, row)
	}
	return rows, runErr
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

func (r *Runner) runVirtual(ctx context.Context, j Job, anchor time.Time) ([]outcome, *hdrhistogram.Histogram) {
	h := newHist()
	arr := j.Schedule.Arrivals
	out := make([]outcome, 0, len(arr))
	for seq, a := range arr {
		if ctx.Err() != nil {
			break
		}
		o := r.decide(ctx, j, seq, a, anchor, algorithms.At(anchor.Add(a.At)))
		_ = h.RecordValue(max(o.recv.Sub(o.sent).Microseconds(), 1))
		out = append(out, o)
	}
	return out, h
}

// runReal sends each client's arrivals in order at anchor+At on the chosen
// clock (offset = that clock minus the local clock); late arrivals go at once.
func (r *Runner) runReal(ctx context.Context, j Job, anchor time.Time, offset time.Duration) ([]outcome, *hdrhistogram.Histogram) {
	arr := j.Schedule.Arrivals
	out := make([]outcome, len(arr))
	done := make([]bool, len(arr))
	byClient := map[int][]int{}
	for seq, a := range arr {
		byClient[a.Client] = append(byClient[a.Client], seq)
	}
	var mu sync.Mutex
	total := newHist()
	var wg sync.WaitGroup
	for _, seqs := range byClient {
		wg.Add(1)
		go func(seqs []int) {
			defer wg.Done()
			h := newHist()
			for _, seq := range seqs {
				a := arr[seq]
				due := anchor.Add(a.At).Add(-offset)
				if wait := time.Until(due); wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-ctx.Done():
						t.Stop()
					case <-t.C:
					}
				}
				if ctx.Err() != nil {
					break
				}
				at := algorithms.ServerTime()
				if r.Clock == ClientClock {
					at = algorithms.At(time.Now())
				}
				out[seq] = r.decide(ctx, j, seq, a, anchor, at)
				done[seq] = true
				_ = h.RecordValue(max(out[seq].recv.Sub(out[seq].sent).Microseconds(), 1))
			}
			mu.Lock()
			total.Merge(h)
			mu.Unlock()
		}(seqs)
	}
	wg.Wait()
	kept := out[:0]
	for seq := range out {
		if done[seq] {
			kept = append(kept, out[seq])
		}
	}
	return kept, total
}

// decide makes one call and streams its record.
func (r *Runner) decide(ctx context.Context, j Job, seq int, a scenarios.Arrival, anchor time.Time, at algorithms.Clock) outcome {
	key := j.Prefix + "{" + a.Key + "}"
	o := outcome{cost: a.Cost, sent: time.Now()}
	o.d, o.err = j.Limiter.Allow(ctx, key, a.Cost, at)
	o.recv = time.Now()
	if o.err != nil {
		// an errored decision counts at its scheduled time
		o.d = algorithms.Decision{DecidedAt: anchor.Add(a.At)}
	}
	if r.Log != nil {
		rec := Decision{
			Algorithm: j.Limiter.Name(), Scenario: j.Schedule.Scenario,
			Seq: seq, Client: a.Client, Key: a.Key, Cost: a.Cost,
			AtUS:   a.At.Microseconds(),
			SentUS: o.sent.UnixMicro(), RecvUS: o.recv.UnixMicro(),
			DecidedAtUS: o.d.DecidedAt.UnixMicro(), Allowed: o.d.Allowed,
			Remaining: o.d.Remaining, RetryAfterUS: o.d.RetryAfter.Microseconds(),
			LatencyUS: o.recv.Sub(o.sent).Microseconds(),
		}
		if o.err != nil {
			rec.Error = o.err.Error()
		}
		_ = r.Log.Write(&rec)
	}
	return o
}

// virtualAnchor is the first multiple of the window after VirtualEpoch minus
// the schedule's earliest (negative) offset.
func virtualAnchor(s scenarios.Schedule) time.Time {
	lead := time.Duration(0)
	if len(s.Arrivals) > 0 && s.Arrivals[0].At < 0 {
		lead = -s.Arrivals[0].At
	}
	return alignUp(VirtualEpoch.Add(lead), s.Params.Window)
}

// alignUp returns the first multiple of w since the Unix epoch at or after t.
func alignUp(t time.Time, w time.Duration) time.Time {
	us, wus := t.UnixMicro(), w.Microseconds()
	n := (us + wus - 1) / wus
	return time.UnixMicro(n * wus).UTC()
}

// realAnchor picks the next window boundary on the run's clock that leaves
// Lead before the first arrival, and says how long the run will wait.
func (r *Runner) realAnchor(ctx context.Context, s scenarios.Schedule) (anchor time.Time, offset time.Duration, err error) {
	if r.Clock == RedisClock {
		offset, err = ServerClockOffset(ctx, r.Redis, 16)
		if err != nil {
			return time.Time{}, 0, fmt.Errorf("read the Redis clock: %w", err)
		}
	}
	lead := r.Lead
	if lead <= 0 {
		lead = 300 * time.Millisecond
	}
	first := time.Duration(0)
	if len(s.Arrivals) > 0 {
		first = s.Arrivals[0].At
	}
	now := time.Now().Add(offset)
	anchor = alignUp(now.Add(lead-first), s.Params.Window)
	if r.Progress != nil {
		wait := anchor.Add(first).Sub(now)
		fmt.Fprintf(r.Progress, "%s: waiting %.1fs for the first arrival, %s before the window boundary at %s (%s clock)\n",
			s.Scenario, wait.Seconds(), (-first).String(), anchor.Format("15:04:05.000"), r.Clock)
	}
	return anchor, offset, nil
}

// ServerClockOffset estimates the Redis server's clock minus the local clock
// from samples TIME round trips: the sample with the shortest round trip,
// with the server's reading taken to be at its midpoint. Error: about half
// that round trip.
func ServerClockOffset(ctx context.Context, c redis.UniversalClient, samples int) (time.Duration, error) {
	best := time.Duration(-1)
	var offset time.Duration
	for i := 0; i < max(samples, 1); i++ {
		sent := time.Now()
		st, err := c.Time(ctx).Result()
		recv := time.Now()
		if err != nil {
			return 0, err
		}
		rtt := recv.Sub(sent)
		if best < 0 || rtt < best {
			best = rtt
			mid := sent.Add(rtt / 2)
			offset = st.Sub(mid)
		}
	}
	return offset, nil
}

// summarize computes a Row from a job's outcomes.
func summarize(j Job, outs []outcome, h *hdrhistogram.Histogram, anchor time.Time, clock ClockMode) Row {
	l := j.Limit
	row := Row{
		Algorithm: j.Limiter.Name(), Scenario: j.Schedule.Scenario, LimitDesc: j.Limiter.Describe(),
		Limit: l.Limit, WindowMS: l.Window.Milliseconds(), Clock: string(clock),
	}
	if clock == "" {
		row.Clock = string(VirtualClock)
	}
	offered := make([]Event, 0, len(outs))
	var accepted []Event
	type step struct {
		at      time.Duration
		cost    int64
		allowed bool
	}
	steps := make([]step, 0, len(outs))
	for _, o := range outs {
		cost := o.cost
		at := o.d.DecidedAt.Sub(anchor)
		row.Requests++
		row.Offered += cost
		offered = append(offered, Event{At: at, Cost: cost})
		if o.err != nil {
			row.Errors++
			continue
		}
		steps = append(steps, step{at, cost, o.d.Allowed})
		if o.d.Allowed {
			row.AcceptedRequests++
			row.Accepted += cost
			accepted = append(accepted, Event{At: at, Cost: cost})
		}
	}
	SortEvents(accepted)
	SortEvents(offered)
	var end time.Duration
	row.MaxInWindow, end = MaxInWindow(accepted, l.Window)
	row.MaxWindowEndMS = float64(end.Microseconds()) / 1000
	row.Ratio = float64(row.MaxInWindow) / float64(l.Limit)
	row.Ideal = Ideal(offered, l.Limit, l.Window)
	row.Fidelity = 1
	if row.Ideal > 0 {
		row.Fidelity = float64(row.Accepted) / float64(row.Ideal)
	}
	if h != nil && h.TotalCount() > 0 {
		row.P50US = h.ValueAtQuantile(50)
		row.P99US = h.ValueAtQuantile(99)
		row.P999US = h.ValueAtQuantile(99.9)
		row.MaxUS = h.Max()
	}
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].at < steps[b].at })
	var acc, den int64
	tl := make([]Point, 0, len(steps))
	for i, s := range steps {
		if s.allowed {
			acc += s.cost
		} else {
			den += s.cost
		}
		if i+1 < len(steps) && steps[i+1].at == s.at {
			continue
		}
		tl = append(tl, Point{TMS: float64(s.at.Microseconds()) / 1000, Accepted: acc, Denied: den})
	}
	row.Timeline = thin(tl, 400)
	return row
}

// thin keeps at most n points of a cumulative series, always the last.
func thin(p []Point, n int) []Point {
	if len(p) <= n {
		return p
	}
	out := make([]Point, 0, n+1)
	step := float64(len(p)) / float64(n)
	for i := 0.0; int(i) < len(p); i += step {
		out = append(out, p[int(i)])
	}
	if out[len(out)-1] != p[len(p)-1] {
		out = append(out, p[len(p)-1])
	}
	return out
}
