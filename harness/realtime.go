package harness

// Real time: each client's arrivals sent when due on the run's clock
// (Redis TIME or the local one), against an anchor on a window boundary.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/ratelab/ratelab/scenarios"
)

// runReal sends arr, job j's arrivals, each client's in order at
// anchor+At on the chosen clock (offset = that clock minus the local
// clock; late arrivals go at once), one goroutine per client, telling tl
// each outcome as its call returns and total each call's latency.
func (r *Runner) runReal(ctx context.Context, j Job, arr []scenarios.Arrival, tl *teller, anchor time.Time, offset time.Duration, total *hdrhistogram.Histogram) {
	byClient := map[int][]int{}
	for seq, a := range arr {
		byClient[a.Client] = append(byClient[a.Client], seq)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, seqs := range byClient {
		wg.Add(1)
		go func(seqs []int) {
			defer wg.Done()
			h := NewHist()
			for _, seq := range seqs {
				o, ok := r.decideWhenDue(ctx, j, seq, arr[seq], anchor, offset)
				if !ok {
					break
				}
				_ = h.RecordValue(max(o.Recv.Sub(o.Sent).Microseconds(), 1))
				tl.add(o)
			}
			mu.Lock()
			total.Merge(h)
			mu.Unlock()
		}(seqs)
	}
	wg.Wait()
}

// decideWhenDue waits until arrival a (index seq of job j) is due on the
// run's real clock, anchor + At (offset = that clock minus the local
// clock; a late arrival goes at once), and decides it on that clock: the
// server's TIME, or the local clock with the client's skew. False when
// ctx ended first.
func (r *Runner) decideWhenDue(ctx context.Context, j Job, seq int, a scenarios.Arrival, anchor time.Time, offset time.Duration) (Outcome, bool) {
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
		return Outcome{}, false
	}
	at := algorithms.RedisTime()
	if r.Clock == ClientClock {
		at = algorithms.At(time.Now().Add(j.ClockSkew(a.Client)))
	}
	return r.decide(ctx, j, seq, a, anchor, at), true
}

// realAnchor picks the next window boundary (of window w) on the run's
// clock that leaves Lead before arr's first arrival, and says on Progress
// how long the run of scenario will wait.
func (r *Runner) realAnchor(ctx context.Context, scenario string, w time.Duration, arr []scenarios.Arrival) (anchor time.Time, offset time.Duration, err error) {
	if r.Clock == RedisClock {
		offset, err = server.ServerClockOffset(ctx, r.Redis, 16)
		if err != nil {
			return time.Time{}, 0, fmt.Errorf("read the Redis clock: %w", err)
		}
	}
	lead := r.Lead
	if lead <= 0 {
		lead = 300 * time.Millisecond
	}
	first := time.Duration(0)
	if len(arr) > 0 {
		first = arr[0].At
	}
	now := time.Now().Add(offset)
	anchor = AlignUp(now.Add(lead-first), w)
	if r.Unaligned {
		anchor = now.Add(lead - first)
	}
	if r.Progress != nil {
		wait := anchor.Add(first).Sub(now)
		fmt.Fprintf(r.Progress, "%s: waiting %.1fs for the first arrival, %s before the window boundary at %s (%s clock)\n",
			scenario, wait.Seconds(), (-first).String(), anchor.Format("15:04:05.000"), r.Clock)
	}
	return anchor, offset, nil
}
