package verify

import (
	"testing"
	"time"
)

// The judge reads decision times as the limiter was handed them (whole µs)
// and counts a set only when it fits in (t-W, t] there: two decisions
// exactly W apart by the µs are never one window, even when the schedule's
// nanoseconds put them W-364ns apart (a false alarm at L=10,000 if mishandled).
func TestJudgeOnTheLimitersClock(t *testing.T) {
	t.Parallel()
	anchor := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const w = time.Second
	first := 156601950 * time.Nanosecond // +156.601950ms
	last := 1156601586 * time.Nanosecond // +1.156601586s: W-364ns later
	lo, hi := onInjectedClock(anchor, first), onInjectedClock(anchor, last)
	if lo != 156601*time.Microsecond || hi-lo != w {
		t.Fatalf("on the injected clock: %v and %v (%v apart); want whole µs, W apart", lo, hi, hi-lo)
	}
	cases := []struct {
		name  string
		times []time.Duration
		w     time.Duration
		want  int64
	}{
		// the limiter's (now-W, now] has already dropped the first
		{"W apart by the µs", []time.Duration{lo, hi}, judgedWindow(w, time.Microsecond, true), 1},
		{"1µs less than W apart", []time.Duration{lo + time.Microsecond, hi}, judgedWindow(w, time.Microsecond, true), 2},
		// a {now_ms} script: a set counts only when it fits in W-1ms
		{"ms script, W-1ms apart", []time.Duration{0, w - time.Millisecond}, judgedWindow(w, time.Millisecond, true), 1},
		{"ms script, W-1001µs apart", []time.Duration{0, w - time.Millisecond - time.Microsecond}, judgedWindow(w, time.Millisecond, true), 2},
	}
	for _, c := range cases {
		acc := make([]timed, len(c.times))
		for i, x := range c.times {
			acc[i] = timed{lo: x, hi: x, cost: 1, key: "user", ok: true}
		}
		if got, _, _, _ := maxConservative(acc, c.w); got != c.want {
			t.Errorf("%s: %d in one window, want %d", c.name, got, c.want)
		}
	}
	// send/receive bounds in ns: the limiter's µs clock may truncate two
	// true times under W apart to W apart, so at least 1µs comes off
	for _, c := range []struct {
		res  time.Duration
		want time.Duration
	}{{0, w - time.Microsecond}, {time.Microsecond, w - time.Microsecond}, {time.Millisecond, w - time.Millisecond}} {
		if got := judgedWindow(w, c.res, false); got != c.want {
			t.Errorf("bounds at resolution %v: judged window %v, want %v", c.res, got, c.want)
		}
	}
}
